"""`scale.scope: key`: one engine per input partition, its state mirrored to a changelog.

Each (topic, partition) this process owns has its own RocksDB directory
(`<state.path>/<topic>-<partition>`) wrapped in a `ChangelogStore` writing to the same partition
number of the input topic's changelog (`scale.changelog_topic`, compacted, as many partitions
as the input). Messages are scoped by their key (`Message.scope`, see
`stream_dedup.engine.scope`), so two messages with different keys never match, and a key's
messages share a partition.

Opening a partition (`restore.open_state`), before any of its records is decided: when the
directory was closed cleanly in sync with the changelog (its checkpoint file), only the changelog
records written since are applied to it; otherwise it is wiped and the changelog partition is
restored into it whole (the changelog is the only truth: a directory left by a crash may be
ahead of it, one left by an earlier owner behind it).
A partition revoked by a rebalance is kept open until the assignment is known: when it comes
back to this process and its changelog still ends where this process's last acknowledged write
left it (nobody wrote meanwhile), it is used as it is; otherwise it is closed and restored anew
when its next record arrives.

Per batch, in this order (the order is the delivery guarantee; the service does 4 and 5):
1. Each partition's engine decides its messages in order and writes its state locally, and the
   writes are sent to the changelog (`ChangelogStore.write`).
2. Every changelog record of the batch is acknowledged by the broker (`flush`). While the
   broker is away the records not acknowledged are sent again with the service's backoff
   (`kafka.retry_backoff_s` doubling to `retry_backoff_max_s`), until acknowledged or the
   shutdown time runs out; no output of the batch is sent before.
3. The verdicts go back to the service in the batch's order.
4. The service delivers the outputs and waits for their acknowledgement.
5. The service commits the input offsets.
A crash before 5 replays the batch; the changelog then has its state or none of it (a restore
applies whole writes, `changelog.py`), and the restored engine recognises the ids it holds
(their first verdict again), deciding the rest anew.
Under `kafka.guarantee: exactly_once` the changelog records of 1 and the outputs and offsets of
4 and 5 are in one transaction (or the changelog records in the transaction of the batch
before, committed first); a transaction aborted while running makes the service `forget` its
partitions' local state, restored from the committed changelog at their next record.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kafka import TopicPartition
from kafka.consumer.subscription_state import ConsumerRebalanceListener

from ..config import Settings
from ..engine.batch import Engine, EngineStats
from ..kafka.retry import Backoff
from ..kafka.topics import admin
from ..kafka.transaction import ChangelogProducer
from ..records import Message, Verdict
from .changelog import ChangelogStore, Producer
from .restore import changelog_end, changelog_producer, ensure_changelog_topics, open_state

log = logging.getLogger(__name__)
Partition = tuple[str, int]


@dataclass(slots=True)
class _Owned:
    """A partition's engine and the changelog store under it."""

    engine: Engine
    store: ChangelogStore


class PartitionEngines(ConsumerRebalanceListener):
    """The service's decider under `scope: key`, and the consumer's rebalance listener. It owns
    `producer` (closed by `close`).

    For the service's metrics it looks like one engine: `stats` adds up every partition
    engine's work, `exact.bloom` is the fullest partition's filter, `store` spans all stores.
    `end_of` reads a changelog partition's end offset now (`restore.changelog_end`; a
    parameter so the rebalance logic can be tested without a broker). `backoff` (the
    service's) retries changelog flushes while the broker is away; without one a failed flush
    stops the process.
    """

    def __init__(self, settings: Settings, state_root: str, producer: Producer,
                 end_of: Callable[[str, int], int] | None = None,
                 backoff: Backoff | None = None) -> None:
        self.settings = settings
        self.state_root = state_root
        self.producer = producer
        self.backoff = backoff
        self._end_of = end_of or (lambda topic, p: changelog_end(settings.kafka, topic, p))
        self.active: dict[Partition, _Owned] = {}
        self.suspended: dict[Partition, _Owned] = {}
        self.stats = EngineStats()
        self.exact = _Exact(_Blooms(self))
        self.store = _Stores(self)

    def changelog_of(self, tp: Partition) -> str:
        return self.settings.scale.changelog_for(self.settings.kafka.group_id, tp[0])

    def engines(self) -> list[Engine]:
        return [o.engine for o in (*self.active.values(), *self.suspended.values())]

    def stored_messages(self) -> int:
        """Messages in every open partition's state."""
        return sum(e.stored_messages() for e in self.engines())

    # -- the decider ----------------------------------------------------------------------

    def process(self, messages: Sequence[Message]) -> list[Verdict]:
        """Steps 1-3 of the module docstring."""
        groups: dict[Partition, list[int]] = {}
        for i, m in enumerate(messages):
            if m.origin is None:
                raise ValueError(f"message {m.id} has no origin partition (scope: key)")
            groups.setdefault(m.origin, []).append(i)
        verdicts: list[Verdict | None] = [None] * len(messages)
        used = []
        for tp, positions in groups.items():
            owned = self._owned(tp)
            used.append(owned)
            before = _totals(owned.engine.stats)
            # 1. Decide and write locally; the writes go to the changelog.
            for i, v in zip(positions, owned.engine.process([messages[i] for i in positions]),
                            strict=True):
                verdicts[i] = v
            _add(self.stats, owned.engine.stats, before)
        # 2. Wait for the broker's acknowledgement of the batch's changelog records.
        for owned in used:
            owned.store.flush(self.settings.kafka.produce_timeout_s)
        # 3. Back to the service, which delivers (4) and commits (5).
        return verdicts  # type: ignore[return-value]

    def _owned(self, tp: Partition) -> _Owned:
        owned = self.active.get(tp)
        if owned is None:
            owned = self.suspended.get(tp)
            if owned is not None:
                # Revoked while this batch was being polled: decided on the old state, which
                # stays local from now on; the commit is refused and the new owner replays it.
                log.warning("partition %s/%d was revoked during the poll; its records are "
                            "decided on the old state and replayed by the new owner", *tp)
                owned.store.detach()
                return owned
            owned = self.active[tp] = self._open(tp)
        return owned

    def _open(self, tp: Partition) -> _Owned:
        """Bring the partition's directory in sync with its changelog, open the engine."""
        topic, partition = tp
        changelog = self.changelog_of(tp)
        store, report = open_state(self.settings, os.path.join(self.state_root,
                                                               f"{topic}-{partition}"),
                                   self.producer, changelog, partition, self.backoff)
        log.info("partition restored partition=%s/%d changelog=%s records=%d bytes=%d "
                 "seconds=%.2f from_offset=%d end_offset=%d", topic, partition, changelog,
                 report.records, report.bytes, report.seconds, report.start_offset,
                 report.end_offset)
        try:
            engine = Engine(self.settings, store)
            engine.warm_up()
            return _Owned(engine, store)
        except BaseException:
            store.close()
            raise

    def forget(self, partitions: Sequence[Partition]) -> None:
        """Exactly once: a transaction holding changelog records of these partitions was
        aborted, so their local state is ahead of the changelog. Close it without a checkpoint;
        the next record of each restores it from the committed changelog."""
        for tp in partitions:
            owned = self.active.pop(tp, None) or self.suspended.pop(tp, None)
            if owned is not None:
                owned.store.detach()
                owned.engine.close()
                log.info("partition state dropped after an aborted transaction partition=%s/%d",
                         *tp)

    def close(self) -> None:
        """Close every engine, then the changelog producer (each tried; the first failure is
        raised after all). A store whose records were all acknowledged writes its checkpoint
        (a batch cut short by the shutdown time leaves none: that partition restores whole)."""
        first: Exception | None = None
        owned = [*self.active.items(), *self.suspended.items()]
        self.active.clear()
        self.suspended.clear()
        for tp, o in owned:
            try:
                o.engine.close()
            except Exception as exc:
                log.warning("closing the state of %s/%d failed: %s", *tp, exc)
                first = first or exc
        self.producer.close(timeout=self.settings.kafka.commit_timeout_s)
        if first is not None:
            raise first

    # -- the rebalance listener -----------------------------------------------------------

    def on_partitions_revoked(self, revoked: Sequence[TopicPartition]) -> None:
        """Everything done on them is committed (rebalances run inside poll, between
        batches); keep their engines until the assignment says whether they come back."""
        for tp in revoked:
            key = (tp.topic, tp.partition)
            if key in self.active:
                self.suspended[key] = self.active.pop(key)

    def on_partitions_assigned(self, assigned: Sequence[TopicPartition]) -> None:
        """Resume a suspended engine that came back unchanged; close the others. Newly
        assigned partitions are restored when their first record arrives."""
        back = {(tp.topic, tp.partition) for tp in assigned}
        for key, owned in list(self.suspended.items()):
            del self.suspended[key]
            store = owned.store
            if (key in back and not store.detached
                    and self._end_of(self.changelog_of(key), key[1]) == store.end_offset):
                self.active[key] = owned
                continue
            log.info("partition state closed partition=%s/%d (%s)", *key,
                     "changed elsewhere" if key in back else "moved to another member")
            owned.engine.close()

    def on_partitions_lost(self, lost: Sequence[TopicPartition]) -> None:
        """Evicted: another member may own them already, so their state must be restored."""
        for tp in lost:
            owned = self.active.pop((tp.topic, tp.partition), None)
            if owned is not None:
                owned.engine.close()


def open_partitioned(settings: Settings, state_root: str, backoff: Backoff | None = None,
                     producer: ChangelogProducer | None = None) -> PartitionEngines:
    """Make sure each input topic has its changelog (compacted, as many partitions as the
    input), and the decider with its changelog producer (`producer`, the transactional
    sink's under exactly_once, else one of its own), retrying flushes with `backoff`.
    Input topics that do not exist are left to `Service.check_topics`, which names them."""
    k, c = settings.kafka, settings.scale
    with admin(k) as client:
        described = client.describe_topics(list(k.input_topics))
    ensure_changelog_topics(k, {c.changelog_for(k.group_id, t["name"]): len(t["partitions"])
                                for t in described if t["error_code"] == 0},
                            c.changelog_max_record_bytes)
    return PartitionEngines(settings, state_root,
                            producer or changelog_producer(k, c.changelog_max_record_bytes),
                            backoff=backoff)


# -- what the metrics read ------------------------------------------------------------------


class _Blooms:
    """The fullest partition Bloom filter's figures (the one to alert on)."""

    def __init__(self, engines: PartitionEngines) -> None:
        self._engines = engines

    def fill_ratio(self) -> float:
        return max((e.exact.bloom.fill_ratio() for e in self._engines.engines()), default=0.0)

    def estimated_fpr(self) -> float:
        return max((e.exact.bloom.estimated_fpr() for e in self._engines.engines()),
                   default=0.0)


@dataclass(frozen=True, slots=True)
class _Exact:
    bloom: _Blooms


class _Stores:
    """Every open partition store's size on disk as one, for the metrics."""

    def __init__(self, engines: PartitionEngines) -> None:
        self._engines = engines

    def disk_bytes(self) -> int:
        return sum(e.store.disk_bytes() for e in self._engines.engines())


def _totals(stats: EngineStats) -> tuple[int, int, int, dict[str, float]]:
    return stats.messages, stats.expired, stats.candidates, dict(stats.stage_seconds)


def _add(total: EngineStats, stats: EngineStats,
         before: tuple[int, int, int, dict[str, float]]) -> None:
    """Add what one engine did since `before` (its `_totals`) to the running `total`."""
    messages, expired, candidates, seconds = before
    total.messages += stats.messages - messages
    total.expired += stats.expired - expired
    total.candidates += stats.candidates - candidates
    for stage, spent in stats.stage_seconds.items():
        total.stage_seconds[stage] += spent - seconds[stage]
