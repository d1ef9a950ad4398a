"""A partition's state from its changelog: restored whole, or only the tail after a trusted local
checkpoint (`changelog.py` describes the records and the checkpoint), and the changelog topics
and producer themselves."""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import TopicAlreadyExistsError

from ..config import KafkaSettings, Settings
from ..engine.stored import TABLES
from ..errors import ServiceError
from ..kafka.retry import Backoff, CutShort
from ..kafka.security import connect
from ..kafka.topics import TIMEOUT_MS, admin, cluster
from ..state import open_store
from ..state.store import KVStore
from . import checkpoint
from .changelog import (
    RESTORE_BATCH,
    ChangelogStore,
    Producer,
    after_last_end,
    rollback,
    to_writes,
)

log = logging.getLogger(__name__)
TAIL_RECORDS = 1 << 16  # the first span read back from a changelog's end for its last write's end


@dataclass(frozen=True, slots=True)
class RestoreReport:
    """What a restore read: records and their key+value bytes, wall time, and the changelog
    offsets it read from (0 or the log start: from the beginning) and up to. `torn`: the
    records of a write cut short by a crash (after the last write's end), not applied."""

    records: int
    seconds: float
    bytes: int
    end_offset: int
    start_offset: int = 0
    torn: tuple[tuple[bytes, bytes | None], ...] = ()


class CheckpointMismatch(ServiceError):
    """A checkpoint's offset is not in the changelog partition's current range."""


def _reader(settings: KafkaSettings, max_record_bytes: int) -> KafkaConsumer:
    _k, conn = cluster(settings)
    return connect("connecting the changelog reader", settings, lambda: KafkaConsumer(
        group_id=None, client_id=f"{settings.client_id}-changelog", enable_auto_commit=False,
        max_poll_records=RESTORE_BATCH, fetch_max_bytes=max(64 << 20, max_record_bytes),
        max_partition_fetch_bytes=max(16 << 20, max_record_bytes),
        request_timeout_ms=TIMEOUT_MS, bootstrap_timeout_ms=TIMEOUT_MS,
        # exactly_once: the records of aborted transactions are no part of the state, and the
        # end is the last stable offset
        isolation_level=("read_committed" if settings.guarantee == "exactly_once"
                         else "read_uncommitted"), **conn))


def changelog_end(settings: KafkaSettings, topic: str, partition: int) -> int:
    """The end offset of a changelog partition now."""
    reader = _reader(settings, 0)
    try:
        tp = TopicPartition(topic, partition)
        return reader.end_offsets([tp])[tp]
    finally:
        reader.close()


def restore(inner: KVStore, settings: KafkaSettings, topic: str, partition: int,
            timeout_s: float, max_record_bytes: int = 1 << 20,
            start_offset: int | None = None,
            stopping: Callable[[], bool] = lambda: False) -> RestoreReport:
    """Apply the changelog partition, from `start_offset` (None: its beginning, into an empty
    `inner`) to the last write's end before the end offset it has when the restore starts, to
    `inner`; the records after that end (a write a crash cut short) come back in `torn`,
    unapplied. A changelog without any write's end (written before they were) is applied
    whole. ServiceError when it does not finish within `timeout_s`; CheckpointMismatch when
    `start_offset` is before the partition's first offset or after its end; CutShort as soon
    as `stopping()` (a stop was asked: the next start restores again, and records applied
    twice are harmless)."""
    started = time.monotonic()
    tp = TopicPartition(topic, partition)
    reader = _reader(settings, max_record_bytes)
    records = size = 0
    torn: list[tuple[bytes, bytes | None]] = []
    try:
        reader.assign([tp])
        end = reader.end_offsets([tp])[tp]
        first = reader.beginning_offsets([tp])[tp]
        whole = start_offset is None
        if start_offset is None:
            start_offset = first
        elif not first <= start_offset <= end:
            raise CheckpointMismatch(f"checkpoint offset {start_offset} of changelog "
                                     f"{topic}/{partition} is outside {first}..{end}")
        read = _Reader(reader, tp, started, timeout_s, stopping)
        complete = read.last_end(start_offset, end)
        if complete is None:  # none since the checkpoint: all torn; none at all: older format
            complete = end if whole else start_offset
        for got in read.span(start_offset, end):
            done = [(k, v) for o, k, v in got if o < complete]
            torn += [(k, v) for o, k, v in got if o >= complete]
            if done:
                inner.write(to_writes(done))
                records += len(done)
                size += sum(len(k) + len(v or b"") for k, v in done)
    finally:
        reader.close()
    return RestoreReport(records, time.monotonic() - started, size, end, start_offset,
                         tuple(torn))


class _Reader:
    """Reads offset ranges of one changelog partition, all within `timeout_s` of `started`,
    stopping when asked."""

    def __init__(self, reader: KafkaConsumer, tp: TopicPartition, started: float,
                 timeout_s: float, stopping: Callable[[], bool]) -> None:
        self.reader, self.tp, self.stopping = reader, tp, stopping
        self.deadline, self.timeout_s = started + timeout_s, timeout_s

    def span(self, start: int, end: int) -> Iterator[list[tuple[int, bytes, bytes | None]]]:
        """The (offset, key, value) records from `start` to `end`, a poll's worth at a time."""
        tp = self.tp
        self.reader.seek(tp, start)
        while self.reader.position(tp) < end:
            if self.stopping():
                raise CutShort(f"restoring changelog {tp.topic}/{tp.partition} at offset "
                               f"{self.reader.position(tp)} of {end}")
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise ServiceError(
                    f"restoring changelog {tp.topic}/{tp.partition} did not reach offset {end} "
                    f"within {self.timeout_s:.0f} s (at {self.reader.position(tp)}): raise "
                    "scale.restore_timeout_s")
            got = [(r.offset, r.key, r.value)
                   for batch in self.reader.poll(timeout_ms=int(min(left, 1.0) * 1000)).values()
                   for r in batch if r.offset < end]
            if got:
                yield got

    def last_end(self, start: int, end: int) -> int | None:
        """The offset after the last write's end between `start` and `end`, None when there
        is none: read backwards from `end` in spans that double, as a write's records are
        few next to the changelog's."""
        span = TAIL_RECORDS
        while end > start:
            lo = max(start, end - span)
            rows = [row for got in self.span(lo, end) for row in got]
            after = after_last_end([(k, v) for _, k, v in rows])
            if after is not None:
                return rows[after - 1][0] + 1
            end, span = lo, span * 2
        return None


def open_state(settings: Settings, directory: str, producer: Producer, topic: str,
               partition: int, backoff: Backoff | None = None
               ) -> tuple[ChangelogStore, RestoreReport]:
    """Open `directory` (`state.backend`) as the state of changelog (topic, partition), in
    sync with the changelog's end offset: after a trusted checkpoint only the records since
    are restored; otherwise the directory is wiped and the whole partition restored. With a
    `backoff`, a restore cut short by the broker going away starts again from the same offset
    (records applied twice are harmless: each key ends with its last record)."""
    st, sc = settings.state, settings.scale
    durable = st.backend != "memory" and sc.checkpoint_max_age_s > 0
    start = _trusted_offset(directory, topic, partition, sc.checkpoint_max_age_s) \
        if durable else None
    inner = _open_dir(settings, directory, wipe=start is None)
    try:
        try:
            report = _restore(inner, settings, topic, partition, start, backoff)
        except CheckpointMismatch as exc:
            log.warning("checkpoint not used, restoring in full: %s", exc)
            inner.close()
            inner = _open_dir(settings, directory, wipe=True)
            report = _restore(inner, settings, topic, partition, None, backoff)
    except BaseException:
        inner.close()
        raise
    store = ChangelogStore(inner, producer, topic, partition, backoff,
                           directory if durable else None)
    store.end_offset = report.end_offset
    if report.torn:
        # The torn write's keys set back in the changelog too, before any new write: a later
        # write's end would otherwise make a later restore take them as complete.
        undo = rollback(inner, report.torn)
        log.warning("changelog %s/%d: %d records of a write a crash cut short set back (%d keys)",
                    topic, partition, len(report.torn), len(undo.ops))
        store.write(undo)
        store.flush(settings.kafka.produce_timeout_s)
    return store, report


def _open_dir(settings: Settings, directory: str, wipe: bool) -> KVStore:
    st = settings.state
    if wipe:
        shutil.rmtree(directory, ignore_errors=True)
    return open_store(st.backend, directory, TABLES, st.block_cache_mb, st.sync_writes)


def _restore(inner: KVStore, settings: Settings, topic: str, partition: int,
             start: int | None, backoff: Backoff | None) -> RestoreReport:
    sc = settings.scale

    def attempt() -> RestoreReport:
        return restore(inner, settings.kafka, topic, partition, sc.restore_timeout_s,
                       sc.changelog_max_record_bytes, start,
                       backoff.stopping if backoff is not None else lambda: False)

    if backoff is None:
        return attempt()
    return backoff.call(f"restoring changelog {topic}/{partition}", attempt)


def _trusted_offset(directory: str, topic: str, partition: int, max_age_s: float) -> int | None:
    """The offset of the directory's checkpoint when it can be trusted, else None; the
    checkpoint is removed either way (the directory is about to be written)."""
    found = checkpoint.read(directory)
    checkpoint.remove(directory)
    if found is None:
        return None
    reason = _distrust(found, directory, topic, partition, max_age_s)
    if reason is not None:
        log.warning("checkpoint of %s not used, restoring in full: %s", directory, reason)
        return None
    return found.offset


def _distrust(found: checkpoint.Checkpoint, directory: str, topic: str, partition: int,
              max_age_s: float) -> str | None:
    """Why the checkpoint cannot be trusted (None: it can)."""
    if (found.topic, found.partition) != (topic, partition):
        return f"it is of changelog {found.topic}/{found.partition}"
    age = time.time() - found.written_at
    if not 0 <= age <= max_age_s:
        return (f"it is {age:.0f} s old; scale.checkpoint_max_age_s is {max_age_s:.0f} "
                "(tombstones written since may be compacted away)")
    if not os.path.isdir(directory):
        return "the directory is missing"
    return None


def changelog_producer(settings: KafkaSettings, max_record_bytes: int) -> KafkaProducer:
    """The producer of changelog records: idempotent and ``acks=all`` (a record the broker
    acknowledged survives; order per partition holds across retries); a record fails after
    `kafka.produce_timeout_s`, as the outputs do, and `ChangelogStore.flush` sends it again."""
    _k, conn = cluster(settings)
    return connect("connecting the changelog producer", settings, lambda: KafkaProducer(
        client_id=f"{settings.client_id}-changelog", acks="all", enable_idempotence=True,
        linger_ms=settings.linger_ms, batch_size=512 * 1024,
        max_request_size=max_record_bytes + 1024, request_timeout_ms=TIMEOUT_MS,
        delivery_timeout_ms=max(int(settings.produce_timeout_s * 1000),
                                TIMEOUT_MS + settings.linger_ms),
        retry_backoff_ms=int(settings.retry_backoff_s * 1000),
        reconnect_backoff_max_ms=int(settings.retry_backoff_max_s * 1000),
        max_block_ms=int(settings.commit_timeout_s * 1000),
        bootstrap_timeout_ms=TIMEOUT_MS, allow_auto_create_topics=False, **conn))


def _partition_count(client: KafkaAdminClient, name: str) -> int:
    """Partitions of an existing topic. Another process (a second member starting at the same
    moment) may have just created it: until its metadata has spread the broker describes it
    with no partitions, so wait for them, within the admin timeout."""
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while True:
        have = len(client.describe_topics([name])[0]["partitions"])
        if have or time.monotonic() > deadline:
            return have
        time.sleep(0.2)


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
                have = _partition_count(client, name)
                if have != partitions:
                    raise ServiceError(
                        f"changelog topic {name} has {have} partitions, its input has "
                        f"{partitions}: delete it (its state is rebuilt only from it) or "
                        "recreate the input with the same count") from None
