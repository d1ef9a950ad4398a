"""Records of several partitions passed on in event-time order: a partition's prefix up to the
watermark of all partitions owned, and the records of a partition no longer owned forgotten."""

import dataclasses

import pytest

from stream_dedup.scale.merge import EventTimeMerge

pytestmark = pytest.mark.unit


@dataclasses.dataclass(frozen=True)
class _Rec:
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None = None
    value: bytes | None = None
    headers: tuple = ()


def test_merge_passes_records_on_in_event_time_order() -> None:
    merge = EventTimeMerge()
    owned = {("in", 0), ("in", 1), ("in", 2)}
    p0 = [_Rec("in", 0, n, ts) for n, ts in enumerate((1, 5, 9))]
    p1 = [_Rec("in", 1, n, ts) for n, ts in enumerate((2, 3))]
    assert merge.release(p0 + p1, owned, set()) == []  # partition 2 not read yet
    got = merge.release([], owned, {("in", 2)})  # 2 is empty: the watermark is min(9, 3)
    assert [(r.partition, r.timestamp) for r in got] == [(0, 1), (1, 2), (1, 3)]
    late = _Rec("in", 1, 2, 4)
    assert [r.timestamp for r in merge.release([late], owned, {("in", 2)})] == [4]
    rest = merge.release([], owned, {("in", 1), ("in", 2)})  # only partition 0 behind
    assert [r.timestamp for r in rest] == [5, 9]


def test_merge_releases_a_prefix_per_partition_and_forgets_lost_ones() -> None:
    merge = EventTimeMerge()
    owned = {("in", 0), ("in", 1)}
    p0 = [_Rec("in", 0, n, ts) for n, ts in enumerate((1, 10, 2))]
    p1 = [_Rec("in", 1, 0, 6)]
    got = merge.release(p0 + p1, owned, set())  # watermark 6; p0's 2 waits behind its 10
    assert [(r.partition, r.offset) for r in got] == [(0, 0), (1, 0)]
    merge.own({("in", 1)})
    assert merge.release([], {("in", 1)}, {("in", 1)}) == []  # partition 0's records dropped
