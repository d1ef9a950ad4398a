"""Changelog-backed state: every write to a local `KVStore` is also sent to one partition of a
compacted Kafka topic, so that another process can rebuild the store when the partition moves.

API (stable; `scope: key` and the `scope: global` index stage both use it)::

    store = ChangelogStore(inner, producer, topic, partition, backoff=None, checkpoint_dir=None)
    store.write(writes)        # applies to `inner`, then sends one record per put/delete
    store.flush(timeout_s)     # waits for the broker's ack of every record sent so far; with
                               # a `backoff`, retries and re-sends until acked (GaveUp once
                               # the shutdown time ran out); without, ServiceError at once
    store.end_offset           # changelog offset after the last acknowledged record (or -1)
    store.detach()             # from now on writes stay local (the partition moved away)
    store.close()              # closes `inner`; writes the checkpoint when in sync

Restoring it (`restore.py`)::

    open_state(settings, directory, producer, topic, partition, backoff) -> (store, report)
                               # the directory in sync with the changelog's end: only the
                               # tail after a valid checkpoint, else wiped and restored whole;
                               # with a `backoff`, a restore cut short starts again
    restore(inner, settings, topic, partition, timeout_s, max_record_bytes, start_offset=None)
        -> RestoreReport(records, seconds, bytes, end_offset, start_offset, torn)
                               # start_offset (or the beginning) .. end offset seen at the start
    ensure_changelog_topics(settings, {topic: partitions}, max_record_bytes)  # compacted
    changelog_producer(settings, max_record_bytes) -> KafkaProducer  # idempotent, acks=all
    changelog_end(settings, topic, partition) -> int   # the partition's end offset now

Record format: key = one byte, the column family's index in `engine.stored.TABLES`, then the
store key; value = the stored value, or None (a tombstone, which compaction later drops). A range
delete is expanded into one tombstone per key, read from `inner` before the write is applied.
Compaction keeps the newest record per key, which is exactly the store's content.

Within one write the `meta` records go first, then the rest in write order, then the write's
end (`WRITE_END`, a key of no table). A crash can leave only a prefix of a write in the
changelog, and a prefix is no state the engine ever had: a message restored with its doc is
replayed, while those after it are decided again against index entries and anchor postings
their own torn records already changed (capped postings lose earlier posters to them). So a
restore applies records up to the last write's end only; the records after it (a torn write)
are set back by the restoring process, which writes each of their keys' values from before
them (`rollback`) as a write of its own before any other: a later restore, which finds that
write's end after them, gets the same state.

The Bloom filter snapshot (`meta`/`bloom`, written by `Engine.checkpoint`) stays local: it is
sized from rate and window (tens to hundreds of MB), far over Kafka's 1 MB default record
limit, and an engine opened on a store without it rebuilds the filter from its `docs`
(`Engine._rebuild`), which a restore has just written anyway. A directory reopened after
its checkpoint keeps its snapshot, and only the docs restored after it are added.

A flush that fails because the broker is away (or a record timed out) is retried with the
service's `Backoff` (its log line, its metrics hook, its shutdown): every record from the first
one not acknowledged on is sent again, in the original order, so a key's newest value is still
its last record (records after it that were acknowledged are sent twice: harmless on a
compacted topic). Records are kept until acknowledged, so a broker restart loses nothing.
(The idempotent producer acknowledges a partition's records in order; should a later one ever
be acknowledged after an earlier one failed, the changelog holds a non-prefix of the write until
the resend succeeds: a crash in between is the one case where a write's end follows records
that are not its whole write.)

Local checkpoint (`checkpoint.py`): a store closed in sync with its changelog (every record
acknowledged, not detached) records the offset its directory holds, after syncing the
directory; `restore.open_state` removes it before writing, and restores only from that offset on. A
checkpoint is not trusted when it names another changelog partition, when its offset is outside
the partition's current range (topic recreated, records deleted), or when it is older than
`scale.checkpoint_max_age_s` (a tombstone written after it may be compacted away by then).

Fencing, under `kafka.guarantee: at_least_once` only: a paused (not dead) old owner that wakes up
after its partition moved can still append records to the changelog before it learns of the
rebalance (the batch it was deciding, re-sent after a broker or network outage too), and the new
owner's state does not contain them: a later restore of that partition would. The old owner
detaches the store (and drops its unacknowledged records) as soon as the rebalance reaches it.
Under `exactly_once` the records go through the transactional sink's producer
(`kafka.transaction.ChangelogProducer`) inside the outputs' transactions, which the group fences
as Kafka Streams' `exactly_once_v2` does: such records are aborted, and restores read committed
records only.
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

from kafka.errors import KafkaError, KafkaTimeoutError

from ..engine.snapshots import local_only
from ..engine.stored import TABLES
from ..errors import ServiceError
from ..kafka.retry import Backoff, GaveUp, TransactionAborted, is_retriable
from ..state.store import KVStore, WriteSet
from . import checkpoint

log = logging.getLogger(__name__)


class Producer(Protocol):
    """What a store sends its records with: kafka-python's `KafkaProducer`, or under
    exactly_once the transactional sink's producer (`kafka.transaction.ChangelogProducer`)."""

    def send(self, topic: str, key: bytes, value: bytes | None, partition: int) -> Any: ...
    def flush(self, timeout: float) -> None: ...
    def close(self, timeout: float) -> None: ...


_TAG = {cf: bytes([i]) for i, cf in enumerate(TABLES)}
# The record after a write's records: its key is no table's tag; its value (never None, so
# compaction keeps the newest) the number of records before it in the write.
WRITE_END = b"\xff"
_WRITE_END_VALUE = struct.Struct(">I")
RESTORE_BATCH = 20_000  # records applied to the store per write while restoring
FLUSH_SLICE_S = 1.0  # a flush waits in slices so that a shutdown request is noticed


def encode_key(cf: str, key: bytes) -> bytes:
    """The changelog record key of `key` in column family `cf`."""
    return _TAG[cf] + key


def decode_key(record_key: bytes) -> tuple[str, bytes]:
    """(column family, store key) of a changelog record key."""
    return TABLES[record_key[0]], record_key[1:]


def changelog_records(inner: KVStore, writes: WriteSet) -> list[tuple[bytes, bytes | None]]:
    """The (key, value or None) records that mirror `writes`, meta first, each range delete
    expanded to the keys it removes: those in `inner` (call before the write is applied) and
    those the write's own ops put there; then the write's end (`WRITE_END`), when it has any."""
    ops = [op for op in writes.ops if op[0] == "meta"] + [op for op in writes.ops
                                                           if op[0] != "meta"]
    out = [(encode_key(cf, key), value) for cf, key, value in ops if not local_only(cf, key)]
    for cf, start, end in writes.ranges:  # applied after the ops, so they cut those too
        doomed = {key for key, _ in inner.scan(cf, start, end)}
        doomed.update(key for c, key, _ in writes.ops if c == cf and start <= key < end)
        out.extend((encode_key(cf, key), None) for key in sorted(doomed))
    if out:
        out.append((WRITE_END, _WRITE_END_VALUE.pack(len(out))))
    return out


def to_writes(records: Iterable[tuple[bytes, bytes | None]]) -> WriteSet:
    """The store writes that changelog records (in offset order) stand for; a write's end is
    no store write."""
    writes = WriteSet()
    for record_key, value in records:
        if record_key != WRITE_END:
            cf, key = decode_key(record_key)
            writes.ops.append((cf, key, value))
    return writes


def after_last_end(records: Sequence[tuple[bytes, bytes | None]]) -> int | None:
    """The index after the last write's end in `records`, None when they hold none."""
    for i in range(len(records) - 1, -1, -1):
        if records[i][0] == WRITE_END:
            return i + 1
    return None


def rollback(inner: KVStore, torn: Iterable[tuple[bytes, bytes | None]]) -> WriteSet:
    """The writes that undo the records of a write torn by a crash (its end never reached the
    changelog): every key they touched set back to its value in `inner`, which holds the state
    from before them, or deleted where it had none."""
    by_table: dict[str, set[bytes]] = {}
    for cf, key, _ in to_writes(torn).ops:
        by_table.setdefault(cf, set()).add(key)
    writes = WriteSet()
    for cf, keys in by_table.items():
        ordered = sorted(keys)
        writes.ops += [(cf, key, value) for key, value
                       in zip(ordered, inner.get_many(cf, ordered), strict=True)]
    return writes


class ChangelogStore:
    """A `KVStore` whose writes are also sent to (topic, partition); reads stay local.

    `backoff` (the service's) makes `flush` retry while the broker is away; `checkpoint_dir`
    (the directory of a RocksDB `inner`) makes `close` write its checkpoint when in sync."""

    def __init__(self, inner: KVStore, producer: Producer, topic: str, partition: int,
                 backoff: Backoff | None = None, checkpoint_dir: str | None = None) -> None:
        self.inner = inner
        self.producer = producer
        self.topic = topic
        self.partition = partition
        self.backoff = backoff
        self.checkpoint_dir = checkpoint_dir
        self.end_offset = -1
        self.detached = False
        # Records not acknowledged yet, in send order; the first len(_futures) were sent.
        self._records: list[tuple[bytes, bytes | None]] = []
        self._futures: list = []  # FutureRecordMetadata

    @property
    def name(self) -> str:
        return f"changelog {self.topic}/{self.partition}"

    @property
    def in_sync(self) -> bool:
        """The local store holds exactly the changelog up to `end_offset`."""
        return not self.detached and not self._records and self.end_offset >= 0

    def detach(self) -> None:
        """Stop sending: the partition belongs to another process now, and this store's
        further writes (and its unacknowledged ones) must not reach its changelog."""
        self.detached = True
        self._records, self._futures = [], []

    def get_many(self, cf: str, keys: Sequence[bytes]) -> list[bytes | None]:
        return self.inner.get_many(cf, keys)

    def scan(self, cf: str, start: bytes, end: bytes) -> Iterator[tuple[bytes, bytes]]:
        return self.inner.scan(cf, start, end)

    def disk_bytes(self) -> int:
        return self.inner.disk_bytes()

    def close(self, keep: bool = True) -> None:
        """Close `inner`; when it is kept and in sync with the changelog, sync its directory
        and write the checkpoint that lets the next open restore only the tail."""
        self.inner.close(keep)
        if keep and self.checkpoint_dir is not None and self.in_sync:
            checkpoint.write(self.checkpoint_dir, self.topic, self.partition, self.end_offset)

    def write(self, writes: WriteSet) -> None:
        """Apply locally, then send the changelog records (not waited for: see `flush`). A
        retriable send error leaves the records for `flush` to send."""
        if not self.detached:
            self._records.extend(changelog_records(self.inner, writes))
        self.inner.write(writes)
        try:
            self._send_rest()
        except KafkaError as exc:
            if not is_retriable(exc):
                raise ServiceError(f"{self.name}: send failed: {exc}") from None

    def flush(self, timeout_s: float) -> None:
        """Return once the broker acknowledged every record written so far. Each attempt waits
        up to `timeout_s`; with a `backoff` a failed attempt is retried (GaveUp once the
        service's shutdown time ran out), without one it is a ServiceError."""
        if not self._records:
            return
        try:
            if self.backoff is None:
                self._attempt(timeout_s)
            else:
                self.backoff.call(f"flushing {self.name}", lambda: self._attempt(timeout_s))
        except (GaveUp, TransactionAborted):
            raise
        except Exception as exc:
            if is_retriable(exc):
                raise ServiceError(f"{self.name}: {len(self._records)} records not "
                                   f"acknowledged: {exc}") from None
            raise ServiceError(f"{self.name}: a record was refused: {exc}") from None

    def _attempt(self, timeout_s: float) -> None:
        """Send what is unsent, wait for the acknowledgements; raise the first error, keeping
        that record and every later one to be sent again in order."""
        self._send_rest()
        self._wait(timeout_s)
        first = next((i for i, f in enumerate(self._futures) if not f.succeeded()), None)
        if first is None:
            self.end_offset = self._futures[-1].value.offset + 1
            self._records, self._futures = [], []
            return
        failed = self._futures[first]
        if not failed.is_done:  # still in flight: wait again, send nothing twice
            raise KafkaTimeoutError("no acknowledgement yet")
        self._records, self._futures = self._records[first:], []
        raise failed.exception

    def _send_rest(self) -> None:
        while len(self._futures) < len(self._records):
            key, value = self._records[len(self._futures)]
            self._futures.append(self.producer.send(self.topic, key=key, value=value,
                                                    partition=self.partition))

    def _wait(self, timeout_s: float) -> None:
        """Flush the producer in slices (a shutdown request is noticed within one) for up to
        `timeout_s`; records still in flight then stay with the producer, not sent again."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            try:
                self.producer.flush(timeout=max(min(left, FLUSH_SLICE_S), 0.0))
                return
            except KafkaTimeoutError:
                if self.backoff is not None and self.backoff.give_up():
                    raise GaveUp(f"{self.name}: {len(self._records)} records not "
                                 "acknowledged") from None
                if left <= FLUSH_SLICE_S:
                    raise KafkaTimeoutError(f"no acknowledgement within {timeout_s:.0f} s"
                                            ) from None


