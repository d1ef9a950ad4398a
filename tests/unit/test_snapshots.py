"""What the engine keeps across a restart: the state's format version, and the Bloom filter
snapshot, with the records written after a snapshot added to the filter again on open."""

import logging
import struct
from dataclasses import replace

import pytest

from stream_dedup.config import Settings
from stream_dedup.engine.batch import Engine
from stream_dedup.engine.exact import SNAPSHOT_KEY
from stream_dedup.engine.snapshots import _META_FORMAT, FORMAT_VERSION, LOCAL_SNAPSHOTS
from stream_dedup.engine.stored import TABLES
from stream_dedup.errors import StateError
from stream_dedup.records import Decision, Message
from stream_dedup.state import MemoryStore
from stream_dedup.state.store import WriteSet

pytestmark = pytest.mark.unit
T0 = 1_700_000_000_000
BEFORE, AFTER = "房间干净整洁，早餐品种也比较丰富", "这本书内容空洞，不值得购买，浪费时间"


def message(n: int, text: str) -> Message:
    return Message(f"m{n}", text, T0 + n * 1000)


def test_a_new_state_records_its_format_version() -> None:
    store = MemoryStore(TABLES)
    Engine(Settings(), store)
    assert store.get_many("meta", [_META_FORMAT]) == [struct.pack(">I", FORMAT_VERSION)]


def test_a_state_of_another_format_is_refused() -> None:
    store = MemoryStore(TABLES)
    writes = WriteSet()
    writes.put("meta", _META_FORMAT, struct.pack(">I", FORMAT_VERSION + 1))
    store.write(writes)
    with pytest.raises(StateError, match=f"format version {FORMAT_VERSION + 1}"):
        Engine(Settings(), store)


def with_capacity(capacity: int) -> Settings:
    s = Settings()
    return replace(s, index=replace(s.index, capacity=capacity))


def test_a_state_sized_for_another_capacity_is_refused(caplog: pytest.LogCaptureFixture) -> None:
    store = MemoryStore(TABLES)
    with caplog.at_level(logging.INFO):
        Engine(with_capacity(100_000), store).process([message(1, BEFORE)])
    assert "index layout: 4 tables of 16-bit keys" in caplog.text
    Engine(with_capacity(200_000), store)  # the same layout: accepted
    with pytest.raises(StateError, match=r"index.capacity 50,000,000 needs 10 block tables"):
        Engine(with_capacity(50_000_000), store)


def test_checkpoint_writes_the_local_snapshots() -> None:
    store = MemoryStore(TABLES)
    engine = Engine(Settings(), store)
    engine.process([message(1, BEFORE)])
    engine.checkpoint()
    assert all(store.get_many(cf, [key])[0] is not None for cf, key in LOCAL_SNAPSHOTS)
    assert struct.unpack_from(">Q", store.get_many("meta", [SNAPSHOT_KEY])[0])[0] == 1


def test_records_after_the_snapshot_are_added_to_the_filter_again_on_open() -> None:
    """Without them the filter would answer "absent", which is taken as certain: a repeat of a
    message stored after the last checkpoint would not be found as one."""
    store = MemoryStore(TABLES)
    engine = Engine(Settings(), store)
    engine.process([message(1, BEFORE)])
    engine.checkpoint()
    engine.process([message(2, AFTER)])  # no checkpoint after it: as after a crash
    reopened = Engine(Settings(), store)
    again = reopened.process([message(3, BEFORE), message(4, AFTER)])
    assert [(v.decision, v.matched_id) for v in again] == [(Decision.EXACT, "m1"),
                                                           (Decision.EXACT, "m2")]
