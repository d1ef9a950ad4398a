"""Exactly once (`kafka.guarantee: exactly_once`): a batch's outputs and its input offsets in one
Kafka transaction of librdkafka's producer, fenced by the consumer group's generation.

Per batch: the first output begins a transaction (`send`); `commit` waits for the outputs'
acknowledgements, adds the batch's next offsets to the transaction with the consumer's group
metadata (`send_offsets_to_transaction`), and commits it. A `read_committed` consumer then sees
each input's output once: outputs of a transaction that was aborted, or left open by a crash,
are never visible to it.

Why librdkafka's producer with kafka-python's consumer: the service's producer is librdkafka's
already (`sink.py`: a kafka-python send costs several times more CPU per record), and
`send_offsets_to_transaction` needs the group metadata of the member that polled the batch. That
member is kafka-python's; `group_metadata` hands its generation and member id to librdkafka in
librdkafka's own serialized form of group metadata (the bytes its consumer returns; the C reader
checks the version tag, so a changed format fails loudly, never silently unfenced).

What can go wrong, each said in one log line, and each ending in `TransactionAborted` (nothing of
the transaction is visible; the service polls the batch again and the engine gives its messages
their first verdicts, so exactly one committed copy exists):

- Fenced by the group: this member's generation is over (a pause past the session timeout, a
  rebalance it missed): the broker refuses the offsets (ILLEGAL_GENERATION and the like), or the
  service sees first that the member left the group or lost a partition of the batch, and aborts.
- Fenced producer: another producer initialised this transactional id, or the transaction was
  open longer than `kafka.transaction_timeout_ms` and the broker aborted it (both bump the
  producer epoch). The producer is unusable then: a new one takes the id over.
- A record the broker refuses as too large (its topic's limit lowered since the start): the
  sink learns the lower limit, so the batch decided again has that output cut into a dead
  letter (`oversize.fit`), written in the next transaction instead.
- Any other abortable error (a delivery that failed for good inside the transaction).
Retriable errors (the broker away, a timeout) are retried with the service's backoff.

Under `scale.scope: key` each partition's changelog records go into the same transactions
(`ChangelogProducer`, the sink's producer as `ChangelogStore` sends with), so the committed
changelog holds exactly the decisions whose outputs were committed.

The transactional id (`kafka.transactional_id`, by default derived from the group, the host and
the state path) is stable across restarts of one instance: `init_transactions` of the restarted
instance aborts what the killed one left open at once, instead of read_committed consumers
waiting `transaction_timeout_ms` for the broker to do it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import struct
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple, cast

from confluent_kafka import KafkaError, KafkaException, Message, Producer, TopicPartition
from kafka.errors import KafkaTimeoutError
from kafka.structs import ConsumerGroupMetadata

from ..config import KafkaSettings
from ..errors import ServiceError
from .reporting import NULL_METER, NULL_READY, Meter, Ready
from .retry import Backoff, TransactionAborted
from .route import Output
from .sink import TOO_LARGE, KafkaSink, Sent, is_permanent, producer_config

log = logging.getLogger(__name__)


def _not_said_twice(record: logging.LogRecord) -> bool:
    """librdkafka's own lines of a failed transaction (facility TXNERR) and of a fenced producer
    (FATAL): `commit` says them, knowing why; and its retries of a new producer's id while the
    broker still aborts the transaction before (GETPID ... retrying), which it waits out."""
    text = record.getMessage()
    return not (text.startswith("TXNERR") or (text.startswith("FATAL") and "fenced" in text)
                or (text.startswith("GETPID") and text.endswith("retrying")))


_librdkafka_log = log.getChild("librdkafka")
_librdkafka_log.addFilter(_not_said_twice)
_CGMD_MAGIC = b"CGMDv2:"  # librdkafka's rd_kafka_consumer_group_metadata_write format
# The broker refused the offsets because this member's generation is over.
GROUP_FENCED = frozenset({KafkaError.ILLEGAL_GENERATION, KafkaError.UNKNOWN_MEMBER_ID,
                          KafkaError.FENCED_INSTANCE_ID, KafkaError.REBALANCE_IN_PROGRESS})
SAID_AGAIN_AFTER_S = 30.0  # an abort for the reason said last is said again after this


def group_metadata(meta: ConsumerGroupMetadata) -> bytes:
    """kafka-python's group metadata in the form librdkafka's `send_offsets_to_transaction`
    reads: tag, generation (native int32), group id, member id, then the group instance id
    (a null flag byte, the id after a 0 flag), strings NUL-terminated."""
    instance = (b"\x01" if meta.group_instance_id is None
                else b"\x00" + meta.group_instance_id.encode() + b"\x00")
    return (_CGMD_MAGIC + struct.pack("=i", meta.generation_id) + meta.group_id.encode()
            + b"\x00" + meta.member_id.encode() + b"\x00" + instance)


def transactional_id(k: KafkaSettings, state_path: str) -> str:
    """`kafka.transactional_id`, or ``{group_id}-{12 hex}`` of the host and the absolute state
    path: one per instance (two instances never share a state directory), the same after a
    restart."""
    if k.transactional_id:
        return k.transactional_id
    where = f"{socket.gethostname()}:{os.path.abspath(state_path)}".encode()
    return f"{k.group_id}-{hashlib.sha256(where).hexdigest()[:12]}"


def _raise_retriable(err: KafkaError) -> None:
    """Hand a retriable librdkafka error to `Backoff.call` as one it retries."""
    if err.retriable() and not err.txn_requires_abort() and not err.fatal():
        raise KafkaTimeoutError(err.str()) from None


class TransactionalSink(KafkaSink):
    """The sink of `kafka.guarantee: exactly_once`: outputs go out inside a transaction that
    `commit` closes together with the batch's offsets."""

    def __init__(self, settings: KafkaSettings, backoff: Backoff, tx_id: str,
                 metrics: Meter = NULL_METER, ready: Ready = NULL_READY) -> None:
        self.tx_id = tx_id
        self._opened: float | None = None  # monotonic time the open transaction began
        self._last_abort: tuple[str, float] = ("", 0.0)  # the last abort's reason, when said
        self._doomed: KafkaError | None = None  # the fatal error a poll raised
        self.generation = 0  # producers taken so far: a record sent by an earlier one is lost
        super().__init__(settings, backoff, metrics, ready)

    def _connect(self) -> Producer:
        """A transactional producer, its id initialised (which aborts what an earlier producer
        with this id left open, and fences that producer)."""
        k = self.settings
        config = producer_config(k)
        producer = Producer({**config, "transactional.id": self.tx_id,
                             "transaction.timeout.ms": k.transaction_timeout_ms,
                             # an output's delivery may not outlast its transaction
                             "message.timeout.ms": min(cast(int, config["message.timeout.ms"]),
                                                       k.transaction_timeout_ms)},
                            logger=_librdkafka_log, error_cb=self._error)
        self.backoff.call("initialising transactions", lambda: self._call(
            lambda: producer.init_transactions(k.commit_timeout_s)))
        log.info("transactions ready transactional_id=%s timeout_ms=%d", self.tx_id,
                 k.transaction_timeout_ms)
        return producer

    def _error(self, err: KafkaError) -> None:
        """A fenced producer is said once, by `commit` (which knows why); others as the sink
        says them."""
        if err.code() != KafkaError._FENCED:
            super()._error(err)

    @staticmethod
    def _call(step: Callable[[], None]) -> None:
        try:
            step()
        except KafkaException as exc:
            _raise_retriable(exc.args[0])
            raise

    def begin(self) -> None:
        """Begin a transaction unless one is open."""
        if self._opened is not None:
            return
        if self._doomed is None:
            try:
                self.producer.begin_transaction()
            except KafkaException as exc:
                if not exc.args[0].fatal():
                    raise
                self._doomed = exc.args[0]
        if self._doomed is not None:  # fenced while no transaction was open
            self._renew("another producer took this transactional id while no "
                        "transaction was open")
            self.producer.begin_transaction()
        self._opened = time.monotonic()

    def _poll(self, seconds: float) -> None:
        """A fenced producer's poll raises its fatal error: kept for `commit` (or `begin`, no
        transaction open), which take a new producer."""
        try:
            self.producer.poll(seconds)
        except KafkaException as exc:
            if not exc.args[0].fatal():
                raise
            self._doomed = exc.args[0]

    def send(self, outputs: Sequence[Output]) -> Sent:
        """Begin a transaction unless one is open, then hand the outputs to the producer."""
        self.begin()
        return super().send(outputs)

    def changelog_producer(self) -> ChangelogProducer:
        """The changelog records' producer of `scale.scope: key`: this one, inside the same
        transactions as the outputs."""
        return ChangelogProducer(self)

    def commit(self, sent: Sent, offsets: dict[tuple[str, int], int],
               group: ConsumerGroupMetadata) -> None:
        """Wait for the outputs of `sent`, add the next `offsets` of their batch to the
        transaction as the member `group` says, and commit. Raises TransactionAborted when the
        transaction was aborted or fenced, a ServiceError when an output can never be written
        (too large, not authorized), GaveUp when the shutdown time ran out."""
        k = self.settings
        try:
            # The acknowledgements first: with the outputs still on their way librdkafka
            # holds the offsets back (~100 ms a commit on a local broker, against ~4 ms).
            self._await(sent)
            fenced = self._doomed or next((err for _, err in sent.failed if err.fatal()), None)
            if fenced is not None:
                self._failed(fenced)
            too_large = [(o, err) for o, err in sent.failed if err.code() in TOO_LARGE]
            if too_large:  # a topic's limit lowered since the start; the record dooms the
                self.learn_limits(too_large)  # transaction, and cut it goes into the next one
                try:
                    self.abort(f"{len(too_large)} records refused by topic "
                               f"{too_large[0][0].topic} as too large ({too_large[0][1].str()}):"
                               " the batch is decided again with them cut into dead letters")
                finally:  # the refused partition's sequence stalls librdkafka's next sends
                    self._renew(None)  # there until they time out: a new producer has none
            for output, err in sent.failed:
                if is_permanent(err):
                    self.abort(f"writing to {output.topic} failed for good", quiet=True)
                    raise ServiceError(f"writing to {output.topic} failed for good: "
                                       f"{err.str()} (the transaction is aborted; a restart "
                                       "decides it again)")
            if sent.failed:
                self.abort(self._timed_out() or f"{len(sent.failed)} outputs were not "
                           f"acknowledged: {sent.failed[0][1].str()}")
            positions = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
            cgmd = group_metadata(group)
            self.backoff.call("adding offsets to the transaction", lambda: self._call(
                lambda: self.producer.send_offsets_to_transaction(positions, cgmd,
                                                                  k.commit_timeout_s)))
            self.backoff.call("committing the transaction", lambda: self._call(
                lambda: self.producer.commit_transaction(k.commit_timeout_s)))
        except KafkaException as exc:
            self._failed(exc.args[0])
        self._opened = None

    def fail(self, err: KafkaError) -> None:
        """A changelog record failed in a way that dooms the transaction."""
        self._failed(err)

    def _failed(self, err: KafkaError) -> None:
        """Abort after an abortable error, or take a new producer after a fatal one (fenced);
        either way raise TransactionAborted."""
        # _FATAL: what a fatal producer answers every later call with
        if not (err.fatal() or err.code() == KafkaError._FATAL):
            self.abort(f"fenced by the group: this member's generation is over (its partitions "
                       f"moved to another member): {err.name()}" if err.code() in GROUP_FENCED
                       else f"{err.name()}: {err.str()}")
        why = self._timed_out() or ("another producer took this transactional id (a second "
                                    "instance with the same kafka.transactional_id?)")
        self._opened = None
        self.metrics.count_error("commit")
        self._renew(why)
        raise TransactionAborted(why)

    def _timed_out(self) -> str | None:
        """Why the transaction failed if it was open past the transaction timeout (the broker
        aborted it, and librdkafka gave up on its outputs), else None."""
        open_s = time.monotonic() - (self._opened or time.monotonic())
        timeout_ms = self.settings.transaction_timeout_ms
        if open_s * 1000 < timeout_ms:
            return None
        return (f"the transaction was open {open_s:.0f} s, past kafka.transaction_timeout_ms "
                f"({timeout_ms} ms), and the broker aborted it")

    def _renew(self, why: str | None) -> None:
        """A fenced producer can do nothing more: a new one takes the transactional id over.
        Says `why` in one line (None: the caller said it)."""
        if why is not None:
            log.warning("producer fenced: %s; what it had not committed is dropped and decided "
                        "again with a new producer transactional_id=%s", why, self.tx_id)
        self.producer = self._connect()
        self._doomed = None
        self.generation += 1

    def _serve(self, seconds: float) -> None:
        """Wait for delivery reports as a flush: the outputs go out at once instead of after
        `kafka.linger_ms`, since the commit waits for them anyway (half a commit's time)."""
        self.producer.flush(seconds)

    def abort(self, why: str, quiet: bool = False) -> None:
        """Abort the open transaction (nothing of it becomes visible) and raise
        TransactionAborted, having said `why` in one line unless `quiet`."""
        if not quiet:
            self._say(why)
        self.metrics.count_error("commit")
        try:
            if self._opened is not None:
                self.backoff.call("aborting the transaction", lambda: self._call(
                    lambda: self.producer.abort_transaction(self.settings.commit_timeout_s)))
        except KafkaException as exc:  # fenced meanwhile: a new producer aborts it
            if not exc.args[0].fatal():
                raise
            self._renew(None if not quiet else self._timed_out() or "fenced while aborting")
        finally:
            self._opened = None
        if not quiet:
            raise TransactionAborted(why)

    def _say(self, why: str) -> None:
        """One line per cause: the same reason again within `SAID_AGAIN_AFTER_S` (a member out of
        the group aborts each batch it polled before the consumer learns it) is only counted."""
        now = time.monotonic()
        if why == self._last_abort[0] and now - self._last_abort[1] < SAID_AGAIN_AFTER_S:
            log.debug("transaction aborted again: %s", why)
            return
        self._last_abort = (why, now)
        log.warning("transaction aborted, the batch is decided again: %s", why)

    def close(self) -> None:
        """Abort a transaction still open (a stop whose time ran out), then close."""
        if self._opened is not None:
            try:
                self.abort("the service stops with it open", quiet=True)
            except Exception as exc:  # the broker away: it aborts the transaction on timeout
                log.warning("the open transaction was not aborted (the broker aborts it after "
                            "kafka.transaction_timeout_ms) error=%s", exc)
        try:
            super().close()
        except KafkaException as exc:  # fenced: what it holds is lost with its transaction
            if not exc.args[0].fatal():
                raise


class Written(NamedTuple):
    """Where a changelog record was written (as kafka-python's record metadata says it)."""

    offset: int


class _Sent:
    """A changelog record handed to the transactional producer, as `ChangelogStore` waits on a
    kafka-python send (`is_done`, `succeeded`, `value.offset`, `exception`)."""

    __slots__ = ("error", "exception", "is_done", "value")

    def __init__(self) -> None:
        self.is_done = False
        self.value: Written | None = None
        self.exception: Exception | None = None
        self.error: KafkaError | None = None

    def answered(self, err: KafkaError | None, msg: Message | None) -> None:
        self.is_done = True
        self.error = err
        if err is None and msg is not None:
            self.value = Written(msg.offset())
        if err is not None:
            self.exception = (KafkaTimeoutError(err.str()) if err.retriable()
                              else ServiceError(err.str()))

    def succeeded(self) -> bool:
        return self.is_done and self.exception is None


class ChangelogProducer:
    """kafka-python's producer as `ChangelogStore` uses it (`send`, `flush`, `close`), over the
    transactional sink's producer: a changelog record begins the transaction if none is open,
    so the batch's state goes into the transaction of its outputs and offsets (or of the batch
    before, committed first). `flush` raises TransactionAborted, the transaction aborted, when a
    record failed in a way that dooms it (fenced, abortable)."""

    def __init__(self, sink: TransactionalSink) -> None:
        self.sink = sink
        self._pending: list[_Sent] = []
        self._generation = sink.generation  # of the producer that sent `_pending`

    def send(self, topic: str, key: bytes, value: bytes | None, partition: int) -> _Sent:
        self.sink.begin()
        self._drop_lost()
        sent = _Sent()
        while True:
            try:
                self.sink.producer.produce(topic, value, key, partition, on_delivery=sent.answered)
                break
            except BufferError:  # the local queue is full: serve reports until it drains
                self.sink.producer.poll(0.05)
            except KafkaException as exc:  # fenced: the transaction is lost
                self.sink.fail(exc.args[0])
        self._pending.append(sent)
        return sent

    def flush(self, timeout: float) -> None:
        try:
            left = self.sink.producer.flush(timeout)
        except KafkaException as exc:  # fenced: a fatal producer's flush raises its error
            self.sink.fail(exc.args[0])
        self._drop_lost()
        done = [s for s in self._pending if s.is_done]
        self._pending = [s for s in self._pending if not s.is_done]
        doomed = next((s.error for s in done if s.error is not None
                       and (s.error.fatal() or s.error.txn_requires_abort())), None)
        if doomed is not None:
            self.sink.fail(doomed)
        if left:
            raise KafkaTimeoutError(f"{left} records not acknowledged within {timeout:.1f} s")

    def _drop_lost(self) -> None:
        """Forget the records of a producer the sink replaced: it never answers them (their
        transaction is lost, and the partitions they belong to are restored)."""
        if self._generation != self.sink.generation:
            self._pending = []
            self._generation = self.sink.generation

    def close(self, timeout: float) -> None:
        """The sink closes the producer."""
