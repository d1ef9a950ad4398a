"""Expiry: the messages older than the window leave every table, and only they: their bucket
entries, anchor postings, exact record, doc, id and TTL entry, oldest first."""

import struct

import numpy as np
import pytest

from stream_dedup.config import IndexSettings, Settings, WindowSettings
from stream_dedup.engine.batch import Engine
from stream_dedup.engine.expiry import expire
from stream_dedup.engine.index.tables import ENTRY
from stream_dedup.engine.stored import TABLES, Doc
from stream_dedup.records import Decision, Message
from stream_dedup.state import MemoryStore

pytestmark = pytest.mark.unit
BASE = "酒店位置很好，离地铁站很近，房间干净整洁，早餐品种也比较丰富，下次还会再来住"
T0 = 1_700_000_000_000
# Long texts, a near and an exact copy, short texts (bigram anchors), very short ones
# (one-deletion keys): every kind of key a message is posted under.
TEXTS = [BASE, "这本书内容空洞，不值得购买，浪费时间", BASE + "好评", BASE, "物流很快包装也很好",
         "物流很快包装很好", "好评", "好评啊", "发货速度快，客服态度好，下次还来", "质量不错"]
Tables = dict[str, dict[bytes, bytes]]


def run(engine: Engine, texts: list[str], start: int = 0, step_ms: int = 1000) -> list:
    msgs = [Message(f"m{start + i}", t, T0 + (start + i) * step_ms)
            for i, t in enumerate(texts)]
    return engine.process(msgs)


def test_expiry_forgets_old_messages_and_bounds_state() -> None:
    settings = Settings(window=WindowSettings(seconds=60))
    store = MemoryStore(TABLES)
    engine = Engine(settings, store)
    run(engine, [BASE], step_ms=0)
    sizes = []
    for round_ in range(1, 6):  # every round is two minutes later: all before it expires
        texts = [f"第{round_}轮的第{i}条消息，内容各不相同，编号{round_ * 100 + i}" for i in range(50)]
        run(engine, texts, start=round_ * 1000, step_ms=120_000 // 50)
        sizes.append(store.disk_bytes())
    assert engine.stats.expired >= 200
    assert max(sizes[1:]) <= sizes[1] * 1.5  # bounded, not growing with the stream
    later = run(engine, [BASE], start=9000)[0]
    assert later.decision is Decision.UNIQUE  # its first copy left the window
def filled(index: IndexSettings | None = None) -> Engine:
    """An engine whose window holds all of `TEXTS`, one a second from T0."""
    settings = Settings(window=WindowSettings(seconds=86_400), index=index or IndexSettings())
    engine = Engine(settings, MemoryStore(TABLES))
    run(engine, TEXTS)
    return engine


def state(engine: Engine) -> Tables:
    return {cf: dict(rows) for cf, rows in engine.store._data.items()}  # type: ignore[attr-defined]


def without(tables: Tables, gone: set[int]) -> Tables:
    """`tables` with every trace of the messages at seqs `gone` taken out, emptied values
    deleted: what expiring them must leave."""
    docs = {seq: Doc.decode(seq, data) for seq, data in
            ((struct.unpack(">Q", k)[0], v) for k, v in tables["docs"].items())}
    out: Tables = {"meta": tables["meta"]}
    for cf, dtype, column in (("blocks", ENTRY, "seq"), ("anchors", np.dtype("<u8"), None)):
        out[cf] = {}
        for key, value in tables[cf].items():
            entries = np.frombuffer(value, dtype)
            kept = entries[~np.isin(entries[column] if column else entries, list(gone))]
            if len(kept):
                out[cf][key] = kept.tobytes()
    out["exact"] = {k: v for k, v in tables["exact"].items()
                    if struct.unpack(">Q", v[:8])[0] not in gone}
    out["docs"] = {k: v for k, v in tables["docs"].items()
                   if struct.unpack(">Q", k)[0] not in gone}
    out["ids"] = {k: v for k, v in tables["ids"].items()
                  if k.decode() not in {docs[s].verdict.id for s in gone}}
    out["ttl"] = {k: v for k, v in tables["ttl"].items()
                  if struct.unpack(">QQ", k)[1] not in gone}
    return out


def seqs_before(tables: Tables, cutoff_ms: int) -> set[int]:
    return {seq for ts, seq in (struct.unpack(">QQ", k) for k in tables["ttl"]) if ts < cutoff_ms}


def sweep(engine: Engine, cutoff_ms: int, limit: int = 50_000) -> int:
    return expire(engine.store, engine.settings, engine._strategy, engine._layout, cutoff_ms,
                  limit)


@pytest.mark.parametrize("kept_from", [1, 4, 7, len(TEXTS)])
def test_expiry_removes_exactly_the_messages_before_the_cutoff(kept_from: int) -> None:
    engine = filled()
    before = state(engine)
    cutoff = T0 + kept_from * 1000  # a message at the cutoff itself stays
    gone = seqs_before(before, cutoff)
    assert len(gone) == kept_from
    assert sweep(engine, cutoff) == kept_from
    assert state(engine) == without(before, gone)


@pytest.mark.parametrize("anchors", [True, False])
def test_expiring_everything_leaves_only_the_snapshots(anchors: bool) -> None:
    engine = filled(IndexSettings(anchors=anchors))
    before = state(engine)
    sweep(engine, T0 + 3_600_000)
    after = state(engine)
    assert after.pop("meta") == before["meta"]
    assert after == {cf: {} for cf in TABLES if cf != "meta"}


def test_expiry_takes_the_oldest_first_up_to_its_limit() -> None:
    engine = filled()
    before = state(engine)
    assert sweep(engine, T0 + 3_600_000, limit=3) == 3
    assert state(engine) == without(before, seqs_before(before, T0 + 3000))


def test_nothing_expires_before_time_begins() -> None:
    engine = filled()
    before = state(engine)
    assert sweep(engine, 0) == 0 and sweep(engine, T0) == 0
    assert state(engine) == before


def test_an_expired_text_is_new_again_and_a_kept_one_is_not() -> None:
    engine = filled()
    sweep(engine, T0 + 3000)  # m0 .. m2 leave
    again = run(engine, [TEXTS[1], TEXTS[9]], start=100)
    assert again[0].decision is Decision.UNIQUE
    assert again[1].decision is Decision.EXACT and again[1].matched_id == "m9"
