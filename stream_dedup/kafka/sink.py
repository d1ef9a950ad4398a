"""The output edge: a kafka-python producer, and delivery of a batch until every record is acked.

The producer is idempotent with ``acks=all`` (kafka-python 3.0's defaults, set explicitly here so
the guarantee does not hang on a library default). Delivery is two calls so that the service can
decide the next batch while the broker acknowledges this one: `send` hands a batch's outputs to
the producer and returns at once; `complete` returns only when the broker has acknowledged every
one of them, re-sending what failed with backoff, so the service can commit their input offsets
right after it. `deliver` is both at once. Each attempt that leaves outputs unacknowledged is one
`produce` error in the metrics, and makes the broker "not reachable" until a poll succeeds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kafka import KafkaProducer
from kafka.errors import KafkaError, KafkaTimeoutError
from kafka.partitioner.default import murmur2
from kafka.producer.future import FutureRecordMetadata

from ..config import KafkaSettings
from .observe import BROKER_REACHABLE, NULL_METER, NULL_READY, Meter, Ready
from .retry import Backoff, GaveUp, is_retriable
from .route import Output
from .security import client_security, connect

log = logging.getLogger(__name__)
FLUSH_SLICE_S = 1.0  # flush waits in slices so a shutdown request is noticed
WAIT_LOG_EVERY_S = 5.0


@dataclass(frozen=True, slots=True)
class Sent:
    """Outputs handed to the producer, each with its future (None: the send itself failed)."""

    outputs: list[Output]
    futures: list[FutureRecordMetadata | None]


class KafkaSink:
    """Writes output records and waits for their acknowledgements."""

    def __init__(self, settings: KafkaSettings, backoff: Backoff, metrics: Meter = NULL_METER,
                 ready: Ready = NULL_READY) -> None:
        self.settings = settings
        self.backoff = backoff
        self.metrics = metrics
        self.ready = ready
        self.producer: KafkaProducer = backoff.call(
            "connecting the producer",
            lambda: connect("connecting the producer", settings, self._connect))

    def _connect(self) -> KafkaProducer:
        s = self.settings
        request_ms = 30000
        return KafkaProducer(
            bootstrap_servers=s.bootstrap_servers.split(","),
            client_id=f"{s.client_id}-producer",
            acks="all",
            enable_idempotence=True,
            linger_ms=s.linger_ms,
            batch_size=256 * 1024,
            delivery_timeout_ms=max(int(s.produce_timeout_s * 1000), request_ms + s.linger_ms),
            request_timeout_ms=request_ms,
            max_block_ms=int(s.commit_timeout_s * 1000),
            retry_backoff_ms=int(s.retry_backoff_s * 1000),
            reconnect_backoff_max_ms=int(s.retry_backoff_max_s * 1000),
            bootstrap_timeout_ms=int(s.commit_timeout_s * 1000),
            allow_auto_create_topics=False,
            **client_security(s),
        )

    def prepare(self, topics: Sequence[str]) -> None:
        """Learn where each of `topics` lives now. kafka-python learns it at the first send
        to a topic, one topic per metadata request and at most one request per
        `retry_backoff_s`: left to the first batches, that wait (half a second a topic) lands
        on the latency of their records."""
        for topic in topics:
            self.backoff.call(f"reading the partitions of {topic}",
                              lambda t=topic: self.producer.partitions_for(t))

    def send(self, outputs: Sequence[Output]) -> Sent:
        """Hand every output to the producer (it sends them after `kafka.linger_ms`); returns
        without waiting for the broker."""
        known: dict[str, list[int] | None] = {}
        return Sent(list(outputs), [self._send(o, self._partition(o, known)) for o in outputs])

    def complete(self, sent: Sent) -> None:
        """Wait until the broker acknowledged every output of `sent`, re-sending failed ones
        after a backoff. Raises GaveUp when the service is stopping and its shutdown time ran
        out first; a non-retriable error (a record over the broker's size limit, a missing
        topic) is raised as it is."""
        delay = self.backoff.first_s
        while True:
            self._await(sent.futures)
            failed: list[Output] = []
            error: BaseException | None = None
            for o, f in zip(sent.outputs, sent.futures, strict=True):
                if f is None or f.failed():
                    error = f.exception if f is not None else KafkaTimeoutError("send blocked")
                    if not is_retriable(error):
                        self.metrics.count_error("produce")
                        raise error
                    failed.append(o)
            if not failed:
                return
            self.metrics.count_error("produce")
            self.ready.set(BROKER_REACHABLE, False, f"delivery failed: {error}")
            if self.backoff.give_up():
                raise GaveUp(f"delivering {len(failed)} outputs")
            log.warning("delivery failed, re-sending outputs=%d wait_s=%.1f error=%s",
                        len(failed), delay, error)
            self.backoff.wait(delay)
            delay = min(delay * 2, self.backoff.max_s)
            sent = self.send(failed)
            self._flush()

    def deliver(self, outputs: Sequence[Output]) -> None:
        """`send` and `complete` at once, sending without waiting for `kafka.linger_ms`."""
        sent = self.send(outputs)
        self._flush()
        self.complete(sent)

    def _partition(self, o: Output, known: dict[str, list[int] | None]) -> int | None:
        """The partition of `o`: its own, else the one kafka-python's default partitioner gives
        its key (murmur2 over the topic's sorted partitions), with the partitions of each topic
        (`known`) read once a batch: the partitioner reads and sorts them for every record,
        ~3 µs of a send's ~20. None (the producer decides): no key, or partitions not known."""
        if o.partition is not None or o.key is None:
            return o.partition
        if o.topic not in known:
            try:
                ids = self.producer.partitions_for(o.topic)
            except KafkaError:  # the send says it, or waits it out
                ids = None
            known[o.topic] = sorted(ids) if ids else None
        ids = known[o.topic]
        return ids[(murmur2(o.key) & 0x7FFFFFFF) % len(ids)] if ids else None

    def _send(self, o: Output, partition: int | None) -> FutureRecordMetadata | None:
        try:
            return self.producer.send(o.topic, value=o.value, key=o.key, headers=o.headers,
                                      partition=partition, timestamp_ms=o.timestamp_ms)
        except KafkaError as exc:
            if not is_retriable(exc):
                self.metrics.count_error("produce")
                raise
            return None

    def _flush(self) -> None:
        """Make every record the producer holds ready to go now (not after `kafka.linger_ms`)
        and wait until each completed (acked, or failed after the producer's own retries)."""
        self._waiting(lambda: self.producer.flush(timeout=FLUSH_SLICE_S))

    def _await(self, futures: Sequence[FutureRecordMetadata | None]) -> None:
        """Wait until each of `futures` completed (acked, or failed after the producer's own
        retries)."""
        for f in futures:
            if f is not None and not f.is_done:
                self._waiting(lambda f=f: f.get(timeout=FLUSH_SLICE_S), f)

    def _waiting(self, wait: Callable[[], object],
                 future: FutureRecordMetadata | None = None) -> None:
        """Call `wait` (which gives up after `FLUSH_SLICE_S` with KafkaTimeoutError) until it
        returns or `future` completed, so that a shutdown request is noticed meanwhile; says so
        in the log every `WAIT_LOG_EVERY_S` while the broker is away."""
        started = last_said = time.monotonic()
        while True:
            try:
                wait()
                return
            except Exception as exc:
                if future is not None and future.is_done:
                    return  # it failed: the caller reads its exception
                if not isinstance(exc, KafkaTimeoutError):
                    raise
                if self.backoff.give_up():
                    raise GaveUp("waiting for the broker to acknowledge outputs") from None
            if time.monotonic() - last_said >= WAIT_LOG_EVERY_S:
                last_said = time.monotonic()
                log.warning("outputs not acknowledged yet, still waiting (is the broker away?) "
                            "waited_s=%.0f", last_said - started)

    def close(self) -> None:
        self.producer.close(timeout=self.settings.commit_timeout_s)
