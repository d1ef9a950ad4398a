"""The stream's boilerplate sketch (`commonness`), and the engine's verdicts that read it: the
same in one run, after a crash and after a clean restart."""

import dataclasses

import numpy as np
import pytest

from stream_dedup.config import Settings, VerifySettings
from stream_dedup.engine import scope
from stream_dedup.engine.batch import Engine
from stream_dedup.engine.commonness import Commonness
from stream_dedup.engine.stored import TABLES
from stream_dedup.records import Decision, Message
from stream_dedup.state import MemoryStore

pytestmark = pytest.mark.unit

COMMENT = "这条值得关注"


def test_a_trigram_many_messages_carry_is_common() -> None:
    sketch = Commonness(min_messages=3, generation=1000)
    texts = [COMMENT + body for body in ("今天天气很好", "明天下雨了", "股市上涨了", "油价下跌")]
    masks = []
    for text in texts:
        grams = sketch.hashes([text])[0]
        masks.append(sketch.mask(grams, len(text)))
        sketch.learn(grams, None)
    assert not masks[2].any()  # two earlier messages carried the comment
    assert masks[3][:len(COMMENT)].all() and not masks[3][len(COMMENT):].any()


def test_a_copy_counts_only_what_it_adds() -> None:
    sketch = Commonness(min_messages=2, generation=1000)
    source = "房间干净整洁早餐丰富"
    for _ in range(3):  # copies of one text: its trigrams stay rare
        sketch.learn(sketch.hashes([source])[0], sketch.hashes([source])[0])
    sketch.learn(sketch.hashes([source])[0], None)
    grams = sketch.hashes([source])[0]
    assert not sketch.mask(grams, len(source)).any()


def test_generations_forget_and_snapshots_restore() -> None:
    sketch = Commonness(min_messages=1, generation=2)
    old, new = "今天天气很好", "明天下雨了吧"
    sketch.learn(sketch.hashes([old])[0], None)
    for text in ("一二三四五", "六七八九十", "甲乙丙丁戊", new):  # two generations later
        sketch.learn(sketch.hashes([text])[0], None)
    assert not sketch.mask(sketch.hashes([old])[0], len(old)).any()
    again = Commonness.restore(sketch.snapshot(), 1, 2)
    assert again is not None and again.counted == sketch.counted
    assert again.mask(again.hashes([new])[0], len(new)).all()
    assert Commonness.restore(sketch.snapshot(), 1, 3) is None  # another generation size


def test_a_batch_pass_masks_and_counts_as_one_message_at_a_time() -> None:
    """`InOrder` defers counting to the next mask read; each mask, and the sketch after the
    batch, are what masking and counting one message after the other give, salts and sources
    too, whether or not a mask is read."""
    texts = [COMMENT + body for body in ("今天天气很好", "明天下雨了", "股市上涨了", "油价下跌",
                                         "今天天气很好")] + ["好", "房间干净整洁"]
    salts = np.array([0, 7, 0, 0, 0, 0, 0], np.uint64)
    sources = {4: 0}  # message 4 copies message 0
    read, unread = (2, 3, 5), (4,)
    one, batch = Commonness(2, 3), Commonness(2, 3)  # a new generation within the batch
    grams = one.hashes(texts)
    expected = []
    for i, salt in enumerate(salts.tolist()):
        mine = scope.salted(grams[i], salt)
        if i in read:
            expected.append(one.mask(mine, len(texts[i])).tolist())
        source = sources.get(i)
        one.learn(mine, None if source is None else scope.salted(grams[source], salt))
    counts = batch.in_order(texts, salts)
    got, late = [], []
    for i in range(len(salts)):
        if i in read:
            got.append(list(counts.mask(i)))
        elif i in unread:
            late.append(counts.mask(i))
        if i in sources:
            counts.source(i, sources[i])
    counts.finish()
    assert got == expected
    assert all(expected[1][:len(COMMENT)])  # the comment is common by message 3
    # the copy adds nothing to its source, the one-character text has no trigram: not counted
    assert batch.snapshot() == one.snapshot() and batch.counted == len(salts) - 2
    with pytest.raises(RuntimeError, match="read after a later one"):
        late[0][0]


STREAM = [
    "那把价格改下嗯嗯",
    "好的呢不客气的哦",
    "那把价格改下嗯嗯优惠吗买三支",  # a question added to a stock reply: related
    COMMENT + "今天的房间很干净",
    COMMENT + "早餐种类很丰富",
    COMMENT + "服务员态度很好",
    "好的呢不客气的哦" + COMMENT,  # a stock comment added: a copy
    "亲可以在这边拍哦",
    "亲可以在这边拍哦我们也心急呢",
]


def _verdicts(restart: str | None, keys: list[bytes | None] | None = None,
              only: bytes | None = None) -> list[tuple[Decision, str]]:
    """The stream's verdicts, its messages under `keys` (scopes); `only`: that key's messages
    alone."""
    settings = dataclasses.replace(Settings(), verify=VerifySettings(boilerplate_messages=3))
    store = MemoryStore(TABLES)
    engine = Engine(settings, store)
    keys = keys or [None] * len(STREAM)
    messages = [Message(f"m{i}", t, 1_700_000_000_000 + i * 1000, scope=k)
                for i, (t, k) in enumerate(zip(STREAM, keys, strict=True))
                if only is None or k == only]
    out = [(v.decision, v.reason) for v in engine.process(messages[:5])]
    if restart == "clean":
        engine.checkpoint()
    if restart:
        engine = Engine(settings, store)  # a crash leaves no snapshot: counted again
    out += [(v.decision, v.reason) for v in engine.process(messages[5:])]
    return out


def test_a_restart_changes_no_verdict() -> None:
    alone = _verdicts(None)
    assert alone[2] == (Decision.UNIQUE, "related: added")
    assert alone[6][0] is Decision.NEAR
    assert alone[8] == (Decision.UNIQUE, "related: added")
    assert _verdicts("crash") == alone
    assert _verdicts("clean") == alone


def test_a_keys_boilerplate_is_its_own() -> None:
    """Under scopes (`scale.scope: key`) a key's messages are verdicted as its own stream: the
    comment three other keys' messages carry is not boilerplate to it, and its verdicts do not
    depend on which keys share its partition, before or after a restart."""
    keys = [b"shop"] * 3 + [b"hotel"] * 3 + [b"shop"] * 3
    mixed = _verdicts(None, keys)
    shop = [v for v, k in zip(mixed, keys, strict=True) if k == b"shop"]
    alone = _verdicts(None, keys, only=b"shop")
    assert shop == alone
    assert alone[3] == (Decision.UNIQUE, "related: added")  # the comment added is new here
    assert _verdicts("crash", keys) == mixed
    assert _verdicts("clean", keys) == mixed
    one = [b"hotel"] * len(STREAM)  # one key: as without scopes, also counted again after a crash
    assert _verdicts(None, one) == _verdicts("crash", one) == _verdicts(None)
