"""The engine on the in-memory store (the contract double) and on real RocksDB files."""

import gc
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from rocks_options import families_whose_options_hold

from stream_dedup.config import Settings
from stream_dedup.engine.batch import Engine, engine_store
from stream_dedup.engine.stored import TABLES
from stream_dedup.records import Decision, Message
from stream_dedup.state import MemoryStore, open_store

pytestmark = pytest.mark.unit
BASE = "酒店位置很好，离地铁站很近，房间干净整洁，早餐品种也比较丰富，下次还会再来住"


def run(engine: Engine, texts: list[str], start: int = 0, step_ms: int = 1000) -> list:
    msgs = [Message(f"m{start + i}", t, 1_700_000_000_000 + (start + i) * step_ms)
            for i, t in enumerate(texts)]
    return engine.process(msgs)


def test_unique_exact_and_near() -> None:
    engine = Engine(Settings(), MemoryStore(TABLES))
    v = run(engine, [BASE, "#旅行# " + BASE + " [哈哈]", BASE.replace("干净", "干凈") + "来源：网友",
                     "这本书内容空洞，不值得购买"])
    assert [x.decision for x in v] == [Decision.UNIQUE, Decision.EXACT, Decision.NEAR,
                                       Decision.UNIQUE]
    assert v[1].matched_id == "m0" and v[2].matched_id in {"m0", "m1"}
    assert v[2].distance is not None and v[2].similarity is not None


def test_guards_keep_hard_negatives() -> None:
    engine = Engine(Settings(), MemoryStore(TABLES))
    v = run(engine, ["房间住了3晚一共花了600元服务还行就是早餐一般般吧",
                     "房间住了5晚一共花了900元服务还行就是早餐一般般吧",
                     "这款手机拍照效果好电池也耐用",
                     "这款手机拍照效果不好电池也耐用"])
    assert v[1].decision is Decision.UNIQUE and v[1].guard == "number"
    assert v[3].decision is Decision.UNIQUE and v[3].guard == "negation"


def test_a_new_state_skips_the_lookups_of_what_the_index_never_held() -> None:
    """On a new state the engine keeps a filter of the anchors and buckets it writes and looks
    up only those: the same verdicts as looking up everything, far fewer lookups. A state that
    holds messages already gets no filter."""
    texts = [BASE, BASE[:20] + "，房间有点小", "完全不同的一段文字内容在这里", BASE[5:] + "推荐",
             "离地铁站很近，房间干净整洁", BASE.replace("丰富", "单一")] * 3
    looked_up: Counter[str] = Counter()

    class Counting(MemoryStore):
        def get_many(self, cf: str, keys: list[bytes]) -> list[bytes | None]:
            looked_up[cf] += len(keys)
            return super().get_many(cf, keys)

    filtered = Engine(Settings(), Counting(TABLES))
    assert filtered._written is not None
    with_filter = [run(filtered, texts[i:i + 4], start=i) for i in range(0, len(texts), 4)]
    few = looked_up.copy()
    looked_up.clear()
    plain = Engine(Settings(), Counting(TABLES))
    plain._written = None
    without = [run(plain, texts[i:i + 4], start=i) for i in range(0, len(texts), 4)]
    assert with_filter == without
    assert any(v.decision is Decision.NEAR for batch in without for v in batch)
    assert few["anchors"] < looked_up["anchors"] / 2
    assert few["blocks"] < looked_up["blocks"]
    assert Engine(Settings(), filtered.store)._written is None


def test_batch_equals_one_at_a_time() -> None:
    texts = [BASE, BASE + "！", "完全不同的一段文字内容在这里", BASE[:30], BASE]
    together = run(Engine(Settings(), MemoryStore(TABLES)), texts)
    single_engine = Engine(Settings(), MemoryStore(TABLES))
    alone = [run(single_engine, [t], start=i)[0] for i, t in enumerate(texts)]
    assert [v.decision for v in together] == [v.decision for v in alone]


def test_texts_normalized_by_the_caller_give_the_same_verdicts_and_state() -> None:
    texts = [BASE, "#旅行# " + BASE + " [哈哈]", BASE.replace("干净", "干凈"), "", "  ",
             "這本書內容空洞，不值得購買", "这本书内容空洞，不值得购买", BASE]
    msgs = [Message(f"m{i}", t, 1_700_000_000_000 + i) for i, t in enumerate(texts)]
    itself, given = Engine(Settings(), MemoryStore(TABLES)), Engine(Settings(), MemoryStore(TABLES))
    assert given.process(msgs, given.normalize(texts)) == itself.process(msgs)
    assert given.process(msgs, given.normalize(texts)) == itself.process(msgs)  # replayed
    assert given.store._data == itself.store._data  # type: ignore[attr-defined]


def test_a_moved_clause_is_a_copy_and_words_traded_inside_one_are_not() -> None:
    v = run(Engine(Settings(), MemoryStore(TABLES)), ["商家服务好，物流快", "物流快，商家服务好",
                                                "中国队昨晚击败了日本队", "日本队昨晚击败了中国队"])
    assert v[1].decision is Decision.NEAR and v[1].matched_id == "m0"
    assert v[3].decision is Decision.UNIQUE and v[3].guard == "swap"


def test_the_same_words_asked_and_stated_are_related_and_the_first_stays_the_source(
        tmp_path: Path) -> None:
    texts = ["八月底喎.", "八月底喎?", "至少40人受伤", "至少40人受伤?", "係呀?", "係呀。"]
    engine = Engine(Settings(), open_store("rocksdb", str(tmp_path / "s"), TABLES))
    first = run(engine, texts)
    engine.close()
    # and after a restart, the endings read back from the exact records
    engine = Engine(Settings(), open_store("rocksdb", str(tmp_path / "s"), TABLES))
    again = run(engine, ["八月底喎?", "八月底喎.", "係呀。"], start=len(texts))
    engine.close()
    assert [(v.reason, v.matched_id) for v in first + again] == [
        ("unique", None), ("related: question", "m0"), ("unique", None),
        ("exact: same normalized text", "m2"), ("unique", None), ("related: question", "m4"),
        ("related: question", "m0"), ("exact: same normalized text", "m0"),
        ("related: question", "m4")]


def test_replay_returns_first_verdict() -> None:
    engine = Engine(Settings(), MemoryStore(TABLES))
    first = run(engine, [BASE, BASE])
    again = run(engine, [BASE, BASE])
    assert [v.decision for v in again] == [v.decision for v in first]
    assert all(v.replayed for v in again)
    assert again[0].decision is Decision.UNIQUE  # never a duplicate of its own first pass


def test_restart_keeps_verdicts(tmp_path: Path) -> None:
    path = str(tmp_path / "state")
    engine = Engine(Settings(), open_store("rocksdb", path, TABLES))
    run(engine, [BASE, "另一条完全不同的评论，讲的是书的内容"])
    engine.close()
    reopened = Engine(Settings(), open_store("rocksdb", path, TABLES))
    v = run(reopened, [BASE, BASE + "好评", "另一条完全不同的评论，讲的是书的内容"], start=2)
    assert [x.decision for x in v] == [Decision.EXACT, Decision.NEAR, Decision.EXACT]
    replay = run(reopened, [BASE], start=0)
    assert replay[0].replayed and replay[0].decision is Decision.UNIQUE
    reopened.close()


def test_crash_without_checkpoint_rebuilds_bloom(tmp_path: Path) -> None:
    path = str(tmp_path / "state")
    engine = Engine(Settings(), open_store("rocksdb", path, TABLES))
    run(engine, [BASE])
    engine.store.close()  # no checkpoint: as after kill -9
    reopened = Engine(Settings(), open_store("rocksdb", path, TABLES))
    assert run(reopened, [BASE], start=1)[0].decision is Decision.EXACT
    reopened.close()


def test_collector_paused_only_during_a_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = Engine(Settings(), MemoryStore(TABLES))
    seen = []
    normalize = engine._normalizer.with_clauses
    monkeypatch.setattr(engine._normalizer, "with_clauses",
                        lambda texts: seen.append(gc.isenabled()) or normalize(texts))
    run(engine, [BASE])
    assert seen == [False] and gc.isenabled()

    def fail(texts: list[str]) -> list[str]:
        raise RuntimeError("boom")

    monkeypatch.setattr(engine._normalizer, "with_clauses", fail)
    with pytest.raises(RuntimeError):
        run(engine, [BASE], start=1)
    assert gc.isenabled()  # also after a failed batch
    monkeypatch.setattr(engine._normalizer, "with_clauses", normalize)
    gc.disable()
    try:
        run(engine, [BASE], start=2)
        assert not gc.isenabled()  # a caller's choice is left alone
    finally:
        gc.enable()


@pytest.mark.parametrize(("capacity", "large", "hits"), [
    (500_000, False, False),  # the default: tables within the block cache, lookups mostly miss
    (10**7, True, False),
    (10**8, True, True),  # nearly every bucket of the tables holds entries
])
def test_the_engine_store_reads_its_block_tables_as_their_size_at_capacity_asks(
        tmp_path: Path, capacity: int, large: bool, hits: bool) -> None:
    s = Settings()
    settings = replace(s, index=replace(s.index, capacity=capacity))
    engine_store(settings, str(tmp_path / "s"), sync=False).close()
    held = families_whose_options_hold(tmp_path / "s", "cache_index_and_filter_blocks=false")
    skipping = families_whose_options_hold(tmp_path / "s", "optimize_filters_for_hits=true")
    assert held == ({"blocks"} if large else set())
    assert skipping == ({"blocks"} if hits else set())
