"""Changelog-backed state: every write to a local `KVStore` is also sent to one partition of a
compacted Kafka topic, so that another process can rebuild the store when the partition moves.

API (stable; `scope: key` and the `scope: global` index stage both use it)::

    store = ChangelogStore(inner, producer, topic, partition)   # a KVStore
    store.write(writes)        # applies to `inner`, then sends one record per put/delete
    store.flush(timeout_s)     # waits for the broker's ack of every record sent so far;
                               # ServiceError when one failed or the time ran out
    store.end_offset           # changelog offset after the last acknowledged record (or -1)
    store.detach()             # from now on writes stay local (the partition moved away)
    restore(inner, settings, topic, partition, timeout_s) -> RestoreReport(records, seconds,
                               bytes, end_offset)   # beginning .. end offset seen at the start
    ensure_changelog_topics(settings, {topic: partitions}, max_record_bytes)  # compacted
    changelog_producer(settings, max_record_bytes) -> KafkaProducer  # idempotent, acks=all
    changelog_end(settings, topic, partition) -> int   # the partition's end offset now

Record format: key = one byte, the column family's index in `state.COLUMN_FAMILIES`, then the
store key; value = the stored value, or None (a tombstone, which compaction later drops). A range
delete is expanded into one tombstone per key, read from `inner` before the write is applied.
Compaction keeps the newest record per key, which is exactly the store's content.

Within one write the `meta` records go first: a crash can leave only a prefix of a write in the
changelog, and with the engine's sequence counter ahead of the seqs it covers, a restored store
may skip seqs but never hands one out twice.

The Bloom filter snapshot (`meta`/`bloom`, written by `Engine.checkpoint`) stays local: it is
sized from rate and window (tens to hundreds of MB), far over Kafka's 1 MB default record
limit, and an engine opened on a store without it rebuilds the filter from its `docs`
(`Engine._rebuild_bloom`), which a restore has just written anyway.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError, KafkaTimeoutError, TopicAlreadyExistsError

from ..config import KafkaSettings
from ..errors import ServiceError
from ..exact import _SNAPSHOT_KEY as BLOOM_SNAPSHOT_KEY
from ..kafka.security import connect
from ..kafka.topics import TIMEOUT_MS, admin, cluster
from ..state.store import COLUMN_FAMILIES, KVStore, WriteSet

_TAG = {cf: bytes([i]) for i, cf in enumerate(COLUMN_FAMILIES)}
LOCAL_ONLY = frozenset({("meta", BLOOM_SNAPSHOT_KEY)})
RESTORE_BATCH = 20_000  # records applied to the store per write while restoring


def encode_key(cf: str, key: bytes) -> bytes:
    """The changelog record key of `key` in column family `cf`."""
    return _TAG[cf] + key


def decode_key(record_key: bytes) -> tuple[str, bytes]:
    """(column family, store key) of a changelog record key."""
    return COLUMN_FAMILIES[record_key[0]], record_key[1:]


def changelog_records(inner: KVStore, writes: WriteSet) -> list[tuple[bytes, bytes | None]]:
    """The (key, value or None) records that mirror `writes`, meta first, each range delete
    expanded to the keys it removes: those in `inner` (call before the write is applied) and
    those the write's own ops put there."""
    ops = [op for op in writes.ops if op[0] == "meta"] + [op for op in writes.ops
                                                           if op[0] != "meta"]
    out = [(encode_key(cf, key), value) for cf, key, value in ops
           if (cf, key) not in LOCAL_ONLY]
    for cf, start, end in writes.ranges:  # applied after the ops, so they cut those too
        doomed = {key for key, _ in inner.scan(cf, start, end)}
        doomed.update(key for c, key, _ in writes.ops if c == cf and start <= key < end)
        out.extend((encode_key(cf, key), None) for key in sorted(doomed))
    return out


def to_writes(records: Iterable[tuple[bytes, bytes | None]]) -> WriteSet:
    """The store writes that changelog records (in offset order) stand for."""
    writes = WriteSet()
    for record_key, value in records:
        cf, key = decode_key(record_key)
        writes.ops.append((cf, key, value))
    return writes


class ChangelogStore:
    """A `KVStore` whose writes are also sent to (topic, partition); reads stay local."""

    def __init__(self, inner: KVStore, producer: KafkaProducer, topic: str,
                 partition: int) -> None:
        self.inner = inner
        self.producer = producer
        self.topic = topic
        self.partition = partition
        self.end_offset = -1
        self.detached = False
        self._futures: list = []  # FutureRecordMetadata of records not flushed yet

    def detach(self) -> None:
        """Stop sending: the partition belongs to another process now, and this store's
        further writes must not reach its changelog (the store is stale from here on)."""
        self.detached = True

    def get_many(self, cf: str, keys: Sequence[bytes]) -> list[bytes | None]:
        return self.inner.get_many(cf, keys)

    def scan(self, cf: str, start: bytes, end: bytes) -> Iterator[tuple[bytes, bytes]]:
        return self.inner.scan(cf, start, end)

    def disk_bytes(self) -> int:
        return self.inner.disk_bytes()

    def close(self) -> None:
        self.inner.close()

    def write(self, writes: WriteSet) -> None:
        """Apply locally, then send the changelog records (not waited for: see `flush`)."""
        records = [] if self.detached else changelog_records(self.inner, writes)
        self.inner.write(writes)
        for key, value in records:
            try:
                self._futures.append(self.producer.send(self.topic, key=key, value=value,
                                                        partition=self.partition))
            except KafkaError as exc:
                raise ServiceError(f"changelog {self.topic}/{self.partition}: send failed: "
                                   f"{exc}") from None

    def flush(self, timeout_s: float) -> None:
        """Return once the broker acknowledged every record sent so far."""
        futures, self._futures = self._futures, []
        if not futures:
            return
        try:
            self.producer.flush(timeout=timeout_s)
        except KafkaTimeoutError:
            raise ServiceError(f"changelog {self.topic}/{self.partition}: {len(futures)} "
                               f"records not acknowledged within {timeout_s:.0f} s") from None
        for f in futures:
            if not f.succeeded():
                raise ServiceError(f"changelog {self.topic}/{self.partition}: a record was "
                                   f"refused: {f.exception}")
        self.end_offset = futures[-1].value.offset + 1


@dataclass(frozen=True, slots=True)
class RestoreReport:
    """What a restore read: records and their key+value bytes, wall time, and the changelog
    end offset it read up to."""

    records: int
    seconds: float
    bytes: int
    end_offset: int


def _reader(settings: KafkaSettings, max_record_bytes: int) -> KafkaConsumer:
    _k, conn = cluster(settings)
    return connect("connecting the changelog reader", settings, lambda: KafkaConsumer(
        group_id=None, client_id=f"{settings.client_id}-changelog", enable_auto_commit=False,
        max_poll_records=RESTORE_BATCH, fetch_max_bytes=max(64 << 20, max_record_bytes),
        max_partition_fetch_bytes=max(16 << 20, max_record_bytes),
        request_timeout_ms=TIMEOUT_MS, bootstrap_timeout_ms=TIMEOUT_MS, **conn))


def changelog_end(settings: KafkaSettings, topic: str, partition: int) -> int:
    """The end offset of a changelog partition now."""
    reader = _reader(settings, 0)
    try:
        tp = TopicPartition(topic, partition)
        return reader.end_offsets([tp])[tp]
    finally:
        reader.close()


def restore(inner: KVStore, settings: KafkaSettings, topic: str, partition: int,
            timeout_s: float, max_record_bytes: int = 1 << 20) -> RestoreReport:
    """Apply the changelog partition, from its beginning to the end offset it has when the
    restore starts, to `inner` (an empty store). ServiceError when it does not finish within
    `timeout_s`."""
    started = time.monotonic()
    tp = TopicPartition(topic, partition)
    reader = _reader(settings, max_record_bytes)
    records = size = 0
    try:
        reader.assign([tp])
        end = reader.end_offsets([tp])[tp]
        reader.seek_to_beginning(tp)
        while reader.position(tp) < end:
            left = timeout_s - (time.monotonic() - started)
            if left <= 0:
                raise ServiceError(
                    f"restoring changelog {topic}/{partition} did not reach offset {end} within "
                    f"{timeout_s:.0f} s (at {reader.position(tp)}): raise scale.restore_timeout_s")
            got = [(r.key, r.value)
                   for batch in reader.poll(timeout_ms=int(min(left, 1.0) * 1000)).values()
                   for r in batch if r.offset < end]
            if got:
                inner.write(to_writes(got))
                records += len(got)
                size += sum(len(k) + len(v or b"") for k, v in got)
    finally:
        reader.close()
    return RestoreReport(records, time.monotonic() - started, size, end)


def changelog_producer(settings: KafkaSettings, max_record_bytes: int) -> KafkaProducer:
    """The producer of changelog records: idempotent and ``acks=all`` (a record the broker
    acknowledged survives; order per partition holds across retries)."""
    _k, conn = cluster(settings)
    return connect("connecting the changelog producer", settings, lambda: KafkaProducer(
        client_id=f"{settings.client_id}-changelog", acks="all", enable_idempotence=True,
        linger_ms=settings.linger_ms, batch_size=512 * 1024,
        max_request_size=max_record_bytes + 1024,
        request_timeout_ms=TIMEOUT_MS, max_block_ms=int(settings.commit_timeout_s * 1000),
        bootstrap_timeout_ms=TIMEOUT_MS, allow_auto_create_topics=False, **conn))


def ensure_changelog_topics(settings: KafkaSettings, topics: Mapping[str, int],
                            max_record_bytes: int) -> None:
    """Create each changelog topic (compacted, `max.message.bytes` = `max_record_bytes`) with
    its number of partitions; an existing one must have exactly that many."""
    configs = {"cleanup.policy": "compact", "max.message.bytes": str(max_record_bytes)}
    with admin(settings) as client:
        for name, partitions in topics.items():
            try:
                client.create_topics(
                    {name: {"num_partitions": partitions,
                            "replication_factor": settings.replication_factor,
                            "configs": configs}},
                    timeout_ms=TIMEOUT_MS, wait_for_metadata=True)
            except TopicAlreadyExistsError:
                described = client.describe_topics([name])[0]
                have = len(described["partitions"])
                if have != partitions:
                    raise ServiceError(
                        f"changelog topic {name} has {have} partitions, its input has "
                        f"{partitions}: delete it (its state is rebuilt only from it) or "
                        "recreate the input with the same count") from None
