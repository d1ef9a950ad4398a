"""Span classes on hand-written pairs, including the traps a reprint sets: a same-sound typo, a
broken word, a character reference, a lead-in, a dropped or moved sentence."""

import pytest

from stream_dedup.config import VerifySettings
from stream_dedup.engine.meaning import _CHAT_DECORATION, classify
from stream_dedup.engine.normalize import Normalizer
from stream_dedup.engine.verify import verify

pytestmark = pytest.mark.unit
NORM = Normalizer()


def kinds(first: str, second: str) -> set[str]:
    a, b = NORM.normalize(first), NORM.normalize(second)
    return {span.kind for span in classify(a, b)}


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        ("事故已造成3人死亡", "事故已造成5人死亡", "number"),
        ("全年产量增长了三成", "全年产量增长了五成", "number"),
        ("会议将于今天下午举行", "会议将于明天下午举行", "date"),
        ("会议定在星期一召开", "会议定在星期三召开", "date"),
        ("比赛于1月3日举行", "比赛于1月5日举行", "date"),
        ("北京今天发布暴雨预警", "上海今天发布暴雨预警", "entity"),
        ("这款手机很好用", "这款手机不好用", "negation"),
        ("他会去参加比赛", "他不会去参加比赛", "negation"),
        ("深市今天上涨", "深市今天下跌", "antonym"),
        ("公司去年盈利了", "公司去年亏损了", "antonym"),
        ("太阳队总决赛赢了雄鹿队", "雄鹿队总决赛赢了太阳队", "swap"),
    ],
)
def test_meaning_changes(first: str, second: str, expected: str) -> None:
    assert expected in kinds(first, second)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("张伟今天去北京开会", "章伟今天去北京开会"),  # a same-pronunciation typo, not an entity
        ("坚持到底就是胜利", "不持到底就是胜利"),  # a broken word, not a negation
        ("价格&#65292;很便宜，买了3个", "价格，很便宜，买了3个"),  # a reference is not a number
        ("据报道，今天天气很好，我们去公园", "今天天气很好，我们去公园"),  # a lead-in
        ("今天天气很好。我们去公园玩了一天。", "今天天气很好。"),  # a dropped sentence
        ("我们去公园玩。今天天气很好。", "今天天气很好。我们去公园玩。"),  # clauses reordered
        ("非常近的酒店", "常近的酒店"),  # 非 of 非常 does not negate
    ],
)
def test_reprints_change_no_meaning(first: str, second: str) -> None:
    assert not any(k in {"number", "date", "entity", "negation", "antonym", "swap"}
                   for k in kinds(first, second))


def test_classes_can_be_switched_off() -> None:
    a, b = "今天深市上涨了百分之三", "昨天深市上涨了百分之三"
    on = verify(a, b, VerifySettings())
    off = verify(a, b, VerifySettings(related_date=False))
    assert not on.duplicate and on.guard == "date"
    assert off.duplicate


def test_opcodes_are_difflibs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled SequenceMatcher aligns exactly as the standard library's."""
    import difflib
    import random

    from stream_dedup.engine.batch import meaning

    rng = random.Random(4)
    pairs = []
    for _ in range(300):
        alphabet = rng.choice(["ab", "的一是不了", "abcdef0123"])
        a = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
        b = list(a)
        for _ in range(rng.randint(0, 8)):
            at = rng.randint(0, len(b))
            b[at : at + rng.randint(0, 3)] = rng.choice(alphabet) * rng.randint(0, 3)
        pairs.append((a, "".join(b)))
    got = [meaning.opcodes(a, b) for a, b in pairs]
    monkeypatch.setattr(meaning, "SequenceMatcher", difflib.SequenceMatcher)
    assert got == [meaning.opcodes(a, b) for a, b in pairs]


def test_common_prefix_and_suffix_are_the_plain_scans() -> None:
    import random

    from stream_dedup.engine.batch import meaning

    def scan(x: str, y: str) -> int:
        n = 0
        while n < min(len(x), len(y)) and x[n] == y[n]:
            n += 1
        return n

    rng = random.Random(5)
    for _ in range(3000):
        a, b = ("".join(rng.choice("ab的") for _ in range(rng.randint(0, 12))) for _ in "ab")
        p = scan(a, b)
        assert meaning._common_prefix(a, b) == p
        q = scan(a[p:][::-1], b[p:][::-1])
        assert meaning._common_suffix(a, b, min(len(a), len(b)) - p) == q


def test_opcodes_where_the_differing_parts_share_nothing_are_the_matchers() -> None:
    """One span, as the matcher answers when it finds no common character to align on."""
    import difflib

    from stream_dedup.engine.batch import meaning

    def matcher(a: str, b: str) -> list[tuple[str, int, int, int, int]]:
        p = meaning._common_prefix(a, b)
        q = meaning._common_prefix(a[p:][::-1], b[p:][::-1])
        inner = difflib.SequenceMatcher(None, a[p : len(a) - q], b[p : len(b) - q],
                                        autojunk=False)
        ops = [(t, i1 + p, i2 + p, j1 + p, j2 + p) for t, i1, i2, j1, j2 in inner.get_opcodes()]
        return ([("equal", 0, p, 0, p)] if p else []) + ops + (
            [("equal", len(a) - q, len(a), len(b) - q, len(b))] if q else [])

    pairs = [("好的亲", "好的呢亲"), ("好的呢亲", "好的亲"), ("今天很好", "明天很好"),
             ("价格100元", "价格两百块"), ("abc", "xyz"), ("", "新"), ("旧", ""), ("同", "同")]
    for a, b in pairs:
        assert meaning.opcodes(a, b) == matcher(a, b)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("好麻烦", "好麻顿"),  # a shape's slip that makes no word
        ("已经检查了", "已经捡查了"),
        ("返多少", "饭多少"),  # a sound's slip
        ("请帮我检查一下", "请邦我捡查一下"),  # two slips in seven characters
    ],
)
def test_a_very_short_copy_may_carry_a_slip_that_makes_no_word(first: str, second: str) -> None:
    assert verify(NORM.normalize(first), NORM.normalize(second), VerifySettings()).duplicate


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("快点发货", "缺点发货"),  # the likeness makes another word: 缺点
        ("没评价", "没平价"),  # ... so does the sound: 平价
        ("检查", "捡查"),  # one character of two
        ("请帮我检查一下", "请邦我捡查一卞"),  # three slips in seven characters
        ("请帮我检查", "请邦我捡查"),  # two in five
    ],
)
def test_a_very_short_text_is_not_matched_across_a_new_word_or_too_many_slips(
        first: str, second: str) -> None:
    check = verify(NORM.normalize(first), NORM.normalize(second), VerifySettings())
    assert not check.duplicate and check.guard == "short"


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        # a comment or a greeting at an edge, then a slip next to the shared text
        ("请包装好谢谢", "亲亲，庆包装好谢谢", [("insert", "", "亲亲"), ("replace", "请", "庆")]),
        ("包装好谢谢", "包装好谢卸，收藏了", [("replace", "谢", "卸"), ("insert", "", "收藏了")]),
        # no slip's evidence next to the shared text: one span
        ("我需要什么", "小金需要什么", [("replace", "我", "小金")]),
    ],
)
def test_an_edge_is_parted_from_a_slip_beside_it(first: str, second: str,
                                                  expected: list[tuple[str, str, str]]) -> None:
    a, b = NORM.normalize(first), NORM.normalize(second)
    assert [(s.op, a[s.i1:s.i2], b[s.j1:s.j2]) for s in classify(a, b)] == expected


def test_every_chat_decoration_is_listed_as_normalization_leaves_it() -> None:
    assert {NORM.normalize(w) for w in _CHAT_DECORATION} <= _CHAT_DECORATION
