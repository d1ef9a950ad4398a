"""`scope: key`'s decider without a broker: messages go to their partition's engine, the batch's
changelog records are flushed before the verdicts return, a rebalance keeps a partition's
engine only when it comes back unchanged, and a clean close lets a restart restore only the
tail of each partition's changelog."""

from __future__ import annotations

import pytest
from kafka import TopicPartition
from test_changelog import FakeProducer, backoff
from test_restore import FakeChangelog

from stream_dedup.config import ScaleSettings, Settings, StateSettings
from stream_dedup.engine.batch import Engine
from stream_dedup.engine.stored import TABLES
from stream_dedup.records import Decision, Message
from stream_dedup.scale import restore
from stream_dedup.scale.changelog import ChangelogStore
from stream_dedup.scale.partitioned import PartitionEngines, _Owned
from stream_dedup.state import MemoryStore

pytestmark = pytest.mark.unit
TEXT = "酒店位置很好，离地铁站很近，房间干净整洁，早餐品种也比较丰富，下次还会再来住"
SETTINGS = Settings(state=StateSettings(backend="memory"), scale=ScaleSettings(scope="key"))


class Ends:
    """A fake changelog end offset per partition."""

    def __init__(self) -> None:
        self.ends: dict[int, int] = {}

    def __call__(self, topic: str, partition: int) -> int:
        return self.ends.get(partition, 0)


def engines(*partitions: int) -> tuple[PartitionEngines, FakeProducer, Ends]:
    """A decider with partitions of topic "in" already open (no restore needed)."""
    producer, ends = FakeProducer(), Ends()
    decider = PartitionEngines(SETTINGS, "unused", producer, end_of=ends)  # type: ignore[arg-type]
    for p in partitions:
        store = ChangelogStore(MemoryStore(TABLES), producer, decider.changelog_of(("in", p)), p)
        decider.active[("in", p)] = _Owned(Engine(SETTINGS, store), store)
    return decider, producer, ends


def msg(i: int, partition: int, key: bytes = b"k") -> Message:
    return Message(f"m{i}", TEXT, 1_700_000_000_000 + i, scope=key, origin=("in", partition))


def test_each_partition_has_its_own_index_and_changelog() -> None:
    decider, producer, _ = engines(0, 1)
    v = decider.process([msg(0, 0), msg(1, 1), msg(2, 0)])
    # The same text and key in another partition is another engine: no match there.
    assert [x.decision for x in v] == [Decision.UNIQUE, Decision.UNIQUE, Decision.EXACT]
    assert {(t, p) for t, p, _, _ in producer.sent} == {("stream-dedup-in-changelog", 0),
                                                       ("stream-dedup-in-changelog", 1)}
    assert producer.flushes >= 1
    assert decider.active[("in", 0)].store.end_offset > 0
    assert decider.stats.messages == 3


def test_a_partition_that_comes_back_unchanged_is_kept() -> None:
    decider, _, ends = engines(0, 1)
    decider.process([msg(0, 0), msg(1, 1)])
    ends.ends = {p: o.store.end_offset for (_, p), o in decider.active.items()}
    ends.ends[1] += 5  # another member wrote to partition 1's changelog meanwhile
    kept = decider.active[("in", 0)]
    decider.on_partitions_revoked([TopicPartition("in", 0), TopicPartition("in", 1)])
    assert not decider.active
    decider.on_partitions_assigned([TopicPartition("in", 0), TopicPartition("in", 1)])
    assert decider.active == {("in", 0): kept}  # 1 is restored anew on its next record
    assert not decider.suspended


def test_records_of_a_partition_revoked_during_the_poll_stay_local() -> None:
    decider, producer, _ = engines(0)
    decider.on_partitions_revoked([TopicPartition("in", 0)])
    sent = len(producer.sent)
    v = decider.process([msg(0, 0)])  # polled before the rebalance took the partition away
    assert v[0].decision is Decision.UNIQUE
    assert len(producer.sent) == sent  # nothing reaches the new owner's changelog
    decider.on_partitions_assigned([TopicPartition("in", 0)])
    assert not decider.active and not decider.suspended  # stale: restored anew if needed


def test_lost_partitions_are_closed() -> None:
    decider, _, _ = engines(0, 1)
    decider.on_partitions_lost([TopicPartition("in", 1)])
    assert set(decider.active) == {("in", 0)}


def test_a_message_without_origin_is_refused() -> None:
    decider, _, _ = engines(0)
    with pytest.raises(ValueError, match="no origin"):
        decider.process([Message("x", TEXT, 0, scope=b"k")])


def test_a_restart_after_a_clean_close_restores_only_the_tail(tmp_path, monkeypatch) -> None:
    fake = FakeChangelog(FakeProducer())
    monkeypatch.setattr(restore, "restore", fake)
    settings = Settings(state=StateSettings(backend="rocksdb"), scale=ScaleSettings(scope="key"))

    def start() -> PartitionEngines:
        return PartitionEngines(settings, str(tmp_path), fake.producer,  # type: ignore[arg-type]
                                end_of=Ends(), backoff=backoff())

    decider = start()
    decider.process([msg(0, 0), msg(1, 1)])
    ends = {p: o.store.end_offset for (_, p), o in decider.active.items()}
    decider.close()
    decider = start()
    v = decider.process([msg(2, 0)])
    assert v[0].decision is Decision.EXACT and v[0].matched_id == "m0"  # the state was kept
    assert fake.starts == [None, None, ends[0]]  # opened twice in full, then only the tail
    decider.close()
