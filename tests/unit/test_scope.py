"""Key scoping (`scale.scope: key`): messages of different scopes never match, matching within a
scope is unchanged, and expiry removes salted entries."""

import numpy as np
import pytest

from stream_dedup.config import Settings, WindowSettings
from stream_dedup.engine.batch import Engine, scope
from stream_dedup.engine.stored import TABLES
from stream_dedup.records import Decision, Message
from stream_dedup.state import MemoryStore

pytestmark = pytest.mark.unit
BASE = "酒店位置很好，离地铁站很近，房间干净整洁，早餐品种也比较丰富，下次还会再来住"
NEAR = BASE.replace("干净", "干凈") + "来源：网友"
T0 = 1_700_000_000_000


def msg(i: int, text: str, key: bytes | None, ts: int | None = None) -> Message:
    return Message(f"m{i}", text, T0 + i * 1000 if ts is None else ts, scope=key)


def test_same_text_under_two_keys_is_unique_twice() -> None:
    engine = Engine(Settings(), MemoryStore(TABLES))
    v = engine.process([msg(0, BASE, b"sports"), msg(1, BASE, b"finance"),
                        msg(2, NEAR, b"finance")])
    assert [x.decision for x in v] == [Decision.UNIQUE, Decision.UNIQUE, Decision.NEAR]
    assert v[2].matched_id == "m1"


def test_copies_under_one_key_match_across_batches() -> None:
    engine = Engine(Settings(), MemoryStore(TABLES))
    engine.process([msg(0, BASE, b"a"), msg(1, "完全不同的一段文字内容在这里", b"b")])
    v = engine.process([msg(2, NEAR, b"a"), msg(3, BASE, b"a"), msg(4, NEAR, b"b"),
                        msg(5, BASE, None)])
    assert [x.decision for x in v] == [Decision.NEAR, Decision.EXACT, Decision.UNIQUE,
                                       Decision.UNIQUE]
    assert v[0].matched_id == "m0" and v[1].matched_id == "m0"


def test_within_scope_results_equal_unscoped_ones() -> None:
    texts = [BASE, BASE + "！", "完全不同的一段文字内容在这里", BASE[:30], NEAR, BASE]
    plain = Engine(Settings(), MemoryStore(TABLES)).process(
        [msg(i, t, None) for i, t in enumerate(texts)])
    scoped = Engine(Settings(), MemoryStore(TABLES)).process(
        [msg(i, t, b"channel-7") for i, t in enumerate(texts)])
    assert plain == scoped


def test_salting_keeps_distances_within_a_scope() -> None:
    rng = np.random.default_rng(1)
    fps = rng.integers(0, 2**63, size=4, dtype=np.uint64)
    salts = np.array([scope.salt(b"k")] * 4, np.uint64)
    salted, _ = scope.apply(salts, fps, np.arange(4), np.zeros(0, np.uint64),
                            np.zeros((4, 1), np.int64))
    assert np.array_equal(np.bitwise_count(salted[0] ^ salted[1:]),
                          np.bitwise_count(fps[0] ^ fps[1:]))
    assert scope.salt(None) == 0 and scope.salt(b"") != 0


def test_expiry_removes_salted_entries() -> None:
    store = MemoryStore(TABLES)
    engine = Engine(Settings(window=WindowSettings(seconds=60)), store)
    engine.process([msg(0, BASE, b"a"), msg(1, "完全不同的一段文字内容在这里", b"b"),
                    msg(2, "另外一条完全无关的评论内容，说的是别的事情", None)])
    assert list(store.scan("blocks", b"", b"\xff" * 16))
    later = T0 + 3_600_000
    engine.process([msg(3, "一小时以后的一条新的消息内容，和前面的都不一样", b"c", ts=later)])
    fresh = Engine(Settings(window=WindowSettings(seconds=60)), MemoryStore(TABLES))
    fresh.process([msg(3, "一小时以后的一条新的消息内容，和前面的都不一样", b"c", ts=later)])
    for cf in ("blocks", "anchors", "exact"):  # only the new message's keys are left
        assert [k for k, _ in store.scan(cf, b"", b"\xff" * 16)] == [
            k for k, _ in fresh.store.scan(cf, b"", b"\xff" * 16)], cf
    assert len(list(store.scan("docs", b"", b"\xff" * 16))) == 1
