"""The output edge: librdkafka's producer (confluent-kafka), and delivery of a batch until every
record is acknowledged.

Why librdkafka and not kafka-python here: a kafka-python `send` builds each record in Python
(validation, varints, a future, a lock, a wake-up of its I/O thread), which made it the largest
share of the service's own CPU; confluent-kafka's `produce` hands the record to librdkafka's
native threads for a fraction of that. Its I/O
threads are native, so they do not take the GIL from the consumer and the engine either. The
consumer, the admin client and the `produce` command stay on kafka-python.

The producer is idempotent with ``acks=all`` and keyed records go where Java's default
partitioner puts them (``murmur2_random``), like every other Kafka client's. Delivery is two calls
so that the service can decide the next batch while the broker acknowledges this one: `send`
hands a batch's outputs to the producer and returns at once; `complete` returns only when the
broker has acknowledged every one of them, re-sending what failed with backoff, so the service can
commit their input offsets right after it. `deliver` is both at once. Each attempt that leaves
outputs unacknowledged is one `produce` error in the metrics and makes the broker "not reachable"
until a poll succeeds. A record the broker refuses for what it is (too large, invalid) becomes
a dead letter cut to a size any topic takes (`oversize.shrink`), and a cut dead letter refused
too is logged, counted (`errors_total{kind="dead_letter"}`) and skipped: no record blocks a
batch. Any other error that waiting does not fix (no authorization) stops the service with a
`ServiceError` naming the topic; its batch is not committed and is replayed on restart.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from functools import partial

from confluent_kafka import KafkaError, KafkaException, Message, Producer
from kafka.errors import KafkaTimeoutError

from ..config import KafkaSettings
from ..errors import ServiceError
from .oversize import PRODUCER_MAX_BYTES, limits_of, shrink
from .reporting import BROKER_REACHABLE, NULL_METER, NULL_READY, Meter, Ready
from .retry import Backoff, GaveUp
from .route import Output
from .security import rdkafka_security
from .topics import max_message_bytes

log = logging.getLogger(__name__)
# librdkafka's own log lines (a line per failed connection while a broker is away): under
# "kafka", so that the service's log handlers throttle them as they do kafka-python's.
RDKAFKA_LOG = logging.getLogger("kafka.librdkafka")
UNASSIGNED = -1  # librdkafka's RD_KAFKA_PARTITION_UA: the configured partitioner picks
POLL_SLICE_S = 1.0  # waits in slices so that a shutdown request is noticed
WAIT_LOG_EVERY_S = 5.0
ERROR_LOG_EVERY_S = 30.0  # a client-wide error is said once per this, per error code
# Errors that re-sending does not fix; every other one (timeouts, a broker away, a leader
# moving) is waited out and re-sent.
PERMANENT = frozenset({
    KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.INVALID_RECORD,
    KafkaError.RECORD_LIST_TOO_LARGE, KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED, KafkaError._INVALID_ARG,
    KafkaError.INVALID_TIMESTAMP, KafkaError._AUTHENTICATION,
})
# Permanent errors of one record, not of the client: the record becomes a cut dead letter.
REFUSED_RECORD = frozenset({
    KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.INVALID_RECORD, KafkaError.RECORD_LIST_TOO_LARGE,
    KafkaError.INVALID_TIMESTAMP,
})
# Of those, the ones that say the topic takes smaller records than its limit said at start.
TOO_LARGE = frozenset({KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.RECORD_LIST_TOO_LARGE})


def is_permanent(err: KafkaError) -> bool:
    return err.fatal() or err.code() in PERMANENT


class Sent:
    """Outputs handed to the producer; `pending` counts those not answered yet, `failed` holds
    (output, error) of those the producer gave up on (after its own retries)."""

    __slots__ = ("failed", "outputs", "pending")

    def __init__(self, outputs: Sequence[Output]) -> None:
        self.outputs = list(outputs)
        self.pending = len(self.outputs)
        self.failed: list[tuple[Output, KafkaError]] = []

    def answered(self, output: Output, err: KafkaError | None, _msg: Message | None) -> None:
        """librdkafka's delivery report of one output (run inside `Producer.poll`)."""
        self.pending -= 1
        if err is not None:
            self.failed.append((output, err))


def producer_config(s: KafkaSettings) -> dict[str, object]:
    """librdkafka properties of the service's producer."""
    request_ms = 30000
    return {
        "bootstrap.servers": s.bootstrap_servers,
        "client.id": f"{s.client_id}-producer",
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": s.linger_ms,
        "message.max.bytes": PRODUCER_MAX_BYTES,  # what `oversize` cuts records to fit
        "partitioner": "murmur2_random",  # keyed: Java's default partitioner
        "allow.auto.create.topics": False,
        "message.timeout.ms": max(int(s.produce_timeout_s * 1000), request_ms + s.linger_ms),
        "request.timeout.ms": request_ms,
        "retry.backoff.ms": int(s.retry_backoff_s * 1000),
        "reconnect.backoff.max.ms": int(s.retry_backoff_max_s * 1000),
        **rdkafka_security(s),
    }


class KafkaSink:
    """Writes output records and waits for their acknowledgements."""

    def __init__(self, settings: KafkaSettings, backoff: Backoff, metrics: Meter = NULL_METER,
                 ready: Ready = NULL_READY) -> None:
        self.settings = settings
        self.backoff = backoff
        self.metrics = metrics
        self.ready = ready
        self._said: dict[int, tuple[float, int]] = {}  # error code: (last said, not said since)
        # The most bytes a record of each topic may take (`prepare`), read again when the
        # broker refuses a record as too large (a topic's limit lowered since the start).
        self.limits: dict[str, int] = {}
        self.producer: Producer = self._connect()

    def _connect(self) -> Producer:
        """The producer (it connects in the background: `prepare` is the first wait on it)."""
        return Producer(producer_config(self.settings), logger=RDKAFKA_LOG, error_cb=self._error)

    def _error(self, err: KafkaError) -> None:
        """librdkafka's client-wide errors (a broker away, a refused login), from `poll`."""
        self.ready.set(BROKER_REACHABLE, False, f"producer: {err.str()}")
        now = time.monotonic()
        last, unsaid = self._said.get(err.code(), (-ERROR_LOG_EVERY_S, 0))
        if now - last < ERROR_LOG_EVERY_S:  # a broker away repeats it at every reconnect
            self._said[err.code()] = (last, unsaid + 1)
            return
        self._said[err.code()] = (now, 0)
        if is_permanent(err):
            log.error("producer error error=%s repeated=%d", err.str(), unsaid)
        else:
            log.warning("producer error, librdkafka retries error=%s repeated=%d", err.str(),
                        unsaid)

    def idle(self) -> None:
        """Serve the producer's reports and errors while no batch waits on it (librdkafka runs
        its callbacks only inside a poll: an outage would otherwise be said only at the close)."""
        self._poll(0)

    def _poll(self, seconds: float) -> None:
        """Serve delivery reports and client errors for up to `seconds`."""
        self.producer.poll(seconds)

    def prepare(self, topics: Sequence[str]) -> Mapping[str, int]:
        """Learn where each of `topics` lives now, so that the first batches do not wait for it
        (and a refused login or a missing topic is said at start, not at the first batch);
        returns the most bytes a record of each may take (`limits`, which the sink keeps up to
        date)."""
        limit_s = self.settings.connect_timeout_s
        for topic in topics:
            self.backoff.call(f"reading the partitions of {topic}", partial(self._learn, topic),
                              limit_s)
        self.limits.update(limits_of(self.backoff.call(
            "reading the topics' max.message.bytes", partial(self._max_message_bytes, topics),
            limit_s)))
        return self.limits

    def _max_message_bytes(self, topics: Sequence[str]) -> dict[str, int]:
        return max_message_bytes(self.settings, topics)

    def _learn(self, topic: str) -> None:
        try:
            meta = self.producer.list_topics(topic, timeout=self.settings.commit_timeout_s)
        except KafkaException as exc:
            err: KafkaError = exc.args[0]
            if is_permanent(err):
                raise ServiceError(f"the producer cannot read topic {topic}: {err.str()}") from None
            raise KafkaTimeoutError(err.str()) from None  # retriable: the backoff waits
        found = meta.topics.get(topic)
        missing = found is None or (found.error is not None and found.error.code() in (
            KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC))
        if missing:
            raise ServiceError(f"topic {topic} does not exist on {self.settings.bootstrap_servers}:"
                               " create it with `stream-dedup topics create` (same --config)")
        if found.error is not None or not found.partitions:  # a leader being elected
            raise KafkaTimeoutError(f"topic {topic}: {found.error or 'no partitions yet'}")

    def send(self, outputs: Sequence[Output]) -> Sent:
        """Hand every output to the producer (it sends them after `kafka.linger_ms`); returns
        without waiting for the broker."""
        sent = Sent(outputs)
        produce = self.producer.produce
        for o in sent.outputs:
            report = partial(sent.answered, o)
            while True:
                try:
                    produce(o.topic, o.value, o.key,
                            UNASSIGNED if o.partition is None else o.partition,
                            on_delivery=report, timestamp=o.timestamp_ms, headers=o.headers)
                    break
                except BufferError:  # the local queue is full: serve reports until it drains
                    self._poll(0.05)
                except KafkaException as exc:  # refused before sending (over message.max.bytes)
                    sent.answered(o, exc.args[0], None)
                    break
        self._poll(0)  # reports of earlier batches, without waiting
        return sent

    def complete(self, sent: Sent) -> None:
        """Wait until the broker acknowledged every output of `sent`, re-sending failed ones
        after a backoff. Raises GaveUp when the service is stopping and its shutdown time ran
        out first; an error that re-sending does not fix is a ServiceError."""
        delay = self.backoff.first_s
        while True:
            self._await(sent)
            if not sent.failed:
                return
            self.metrics.count_error("produce")
            letters = self._refused_records(sent)
            if not sent.failed:  # only refused records: their dead letters go out at once
                sent = self.send(letters)
                continue
            for output, err in sent.failed:
                if is_permanent(err):
                    raise ServiceError(f"writing to {output.topic} failed for good: {err.str()} "
                                       "(the batch is not committed; a restart replays it)")
            err = sent.failed[0][1]
            self.ready.set(BROKER_REACHABLE, False, f"delivery failed: {err.str()}")
            if self.backoff.give_up():
                raise GaveUp(f"delivering {len(sent.failed)} outputs")
            log.warning("delivery failed, re-sending outputs=%d wait_s=%.1f error=%s",
                        len(sent.failed), delay, err.str())
            self.backoff.wait(delay)
            delay = min(delay * 2, self.backoff.max_s)
            sent = self.send([o for o, _ in sent.failed] + letters)

    def _refused_records(self, sent: Sent) -> list[Output]:
        """Take the outputs the broker refused for what they are out of `sent.failed`: the cut
        dead letters to send instead. One that is a cut dead letter already is skipped (its
        input offset is committed with the batch), logged and counted."""
        letters: list[Output] = []
        rest: list[tuple[Output, KafkaError]] = []
        self.learn_limits(sent.failed)
        for output, err in sent.failed:
            if err.code() not in REFUSED_RECORD:
                rest.append((output, err))
                continue
            letter = shrink(output, err.str(), self.settings.dead_letter_topic)
            if letter is None:
                self.metrics.count_error("dead_letter")
                log.error("dead letter refused by topic %s, skipped error=%s headers=%s",
                          output.topic, err.str(),
                          {k: v.decode(errors="replace") for k, v in output.headers})
            else:
                log.warning("record refused by topic %s, written as a cut dead letter error=%s",
                            output.topic, err.str())
                letters.append(letter)
        sent.failed = rest
        return letters

    def learn_limits(self, failed: Sequence[tuple[Output, KafkaError]]) -> None:
        """Read again the limit of each topic that refused a record as too large (it was
        lowered since the start): the outputs routed from now on are cut to fit it
        (`oversize.fit`) before they are sent. (The broker refuses a whole record batch, so a
        refused record may be a small one beside a large one: only the topic's own limit says
        which records are too large.)"""
        topics = sorted({o.topic for o, err in failed if err.code() in TOO_LARGE})
        if topics:
            self.limits.update(limits_of(self.backoff.call(
                "reading the topics' max.message.bytes again",
                partial(self._max_message_bytes, topics))))

    def deliver(self, outputs: Sequence[Output]) -> None:
        """`send` and `complete` at once."""
        self.complete(self.send(outputs))

    def _await(self, sent: Sent) -> None:
        """Serve delivery reports until every output of `sent` was answered (acknowledged, or
        failed after the producer's own retries), saying so in the log every
        `WAIT_LOG_EVERY_S` while the broker is away."""
        started = last_said = time.monotonic()
        while sent.pending:
            self._serve(POLL_SLICE_S)
            if not sent.pending:
                return
            if self.backoff.give_up():
                raise GaveUp("waiting for the broker to acknowledge outputs")
            if time.monotonic() - last_said >= WAIT_LOG_EVERY_S:
                last_said = time.monotonic()
                log.warning("outputs not acknowledged yet, still waiting (is the broker away?) "
                            "waited_s=%.0f", last_said - started)

    def _serve(self, seconds: float) -> None:
        """Serve delivery reports for up to `seconds`."""
        self.producer.poll(seconds)

    def close(self) -> None:
        """Wait up to `kafka.commit_timeout_s` for what the producer still holds; not at all
        once the shutdown time has run out (the service said what is replayed)."""
        out_of_time = self.backoff.give_up()
        left = self.producer.flush(0 if out_of_time else self.settings.commit_timeout_s)
        if left and not out_of_time:
            log.warning("closing the producer with %d outputs unacknowledged; their inputs were "
                        "not committed and are replayed on restart", left)
