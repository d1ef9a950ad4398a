"""Span classes on hand-written pairs, including the traps named in the meaning issue."""

import pytest

from stream_dedup.config import VerifySettings
from stream_dedup.engine.meaning import classify
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


def test_word_at_is_the_longest_covering_word_leftmost_first() -> None:
    from stream_dedup.engine.lexicon import lexicon as _lexicon

    lex = _lexicon()

    def reference(text: str, start: int, end: int) -> str:
        best = text[start:end]
        for s in range(max(0, start - 3), start + 1):
            for e in range(min(len(text), end + 3), end - 1, -1):
                if e - s > len(best) and lex.is_word(text[s:e]):
                    best = text[s:e]
                    break
        return best

    for text in ("中华人民共和国成立了", "我们今天去北京大学参观", "不是没有办法"):
        for start in range(len(text)):
            for end in range(start + 1, min(len(text), start + 3) + 1):
                assert lex.word_at(text, start, end) == reference(text, start, end)


def test_segment_is_jiebas_cut_short_or_long() -> None:
    import jieba

    from stream_dedup.engine.lexicon import _CACHED_CUT
    from stream_dedup.engine.lexicon import lexicon as _lexicon

    lex = _lexicon()
    short = "我们今天去北京大学参观"
    long_ = short * (_CACHED_CUT // len(short) + 1)
    for text in (short, short, long_, ""):
        assert lex.segment(text) == tuple(jieba.lcut(text, HMM=False))


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


def clause_kinds(first: str, second: str) -> set[str]:
    """The span classes with the later text's clause ends known, as the engine reads them."""
    (a, b), (_, clauses) = NORM.with_clauses([first, second])
    return {span.kind for span in classify(a, b, None, clauses)}


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("好评，谢谢", "谢谢，好评"),
        ("发货很快，质量好", "质量好，发货很快"),
        ("物流快，好评，包装结实", "包装结实，物流快，好评"),
        ("物流快，好评，包装结实，满意", "好评，物流快，包装结实，满意了"),  # and a particle added
    ],
)
def test_a_moved_clause_is_a_reorder(first: str, second: str) -> None:
    assert clause_kinds(first, second) <= {"reorder", "noise", "material"}
    assert "reorder" in clause_kinds(first, second)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("中国队击败了日本队", "日本队击败了中国队"),
        ("太阳队总决赛赢了雄鹿队，比分一百比九十", "雄鹿队总决赛赢了太阳队，比分一百比九十"),
        ("比分一百比九十，太阳队赢了雄鹿队", "比分一百比九十，雄鹿队赢了太阳队"),
        ("太阳队赢了雄鹿队，比分一百比九十", "比分一百比九十，雄鹿队赢了太阳队"),  # and it moved
    ],
)
def test_words_trading_places_inside_a_clause_stay_a_swap(first: str, second: str) -> None:
    assert "swap" in clause_kinds(first, second)


def stream_kinds(first: str, second: str) -> list[tuple[str, str, str]]:
    """(taken out, put in, class) of each span, the later text's clause ends known and none of
    its characters boilerplate."""
    (a, b), (_, clauses) = NORM.with_clauses([first, second])
    return [(a[s.i1:s.i2], b[s.j1:s.j2], s.kind)
            for s in classify(a, b, [False] * len(b), clauses)]


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        # a clause after a stock reply's clause end: a third of the reply is enough
        ("好的呢不客气的哦", "好的呢不客气的哦，还有别的券吗", "added"),
        ("亲亲价格是最低价了呢", "亲亲价格是最低价了呢，不喜欢44的", "added"),
        ("亲亲价格是最低价了呢", "亲亲价格是最低价了呢不喜欢44的", "material"),  # no clause end
        # a whole common word where the earlier text has a slip's non-word
        ("客官可以带一份这个哦可以腹杂使用优惠券呢", "客官可以带一份这个哦可以沉重使用优惠券呢", "word"),
        ("港资银航股走低", "港资内阁股走低", "word"),
        ("门卡插进去马上就好了", "门卡插进去马…全文", "edit"),  # a cut text's marker, benign
        # a unit after a word of quantity
        ("我跟你说话找半天", "我跟你说话找半周", "unit"),
        ("什么物流啊都那么多天了", "什么物流啊都那么多个月了", "unit"),
        # a person addressed by surname
        ("西媒：老钱+大罗=梅西", "西媒：老范+大罗=梅西", "entity"),
        ("西媒：老马+大罗=梅西", "西媒：老钱+大罗=梅西", "entity"),
        ("我帮您申请下哦", "小戴帮您申请下哦", "entity"),
        ("歌手将开个唱献礼祖国", "歌手将开个唱献礼老戴的祖国", "inserted"),
        ("我这边是明后天发货", "韩这边是明后天发货", "entity"),  # a pronoun for a surname
        ("你们老板手机号多少呢", "孙老板手机号多少呢", "entity"),
        ("你好像邮寄错了", "胡娟好像邮寄错了", "entity"),  # not a broken 你好
        ("大涨小回格局", "大涨小回许的格局", "inserted"),  # a surname's possession
        # ... not a slip after 小 or 老 that makes no address, nor one inside a longer word
        ("开个发票半小时", "开个发票半小形", "typo"),
        ("我可以像小王子一样怀着", "我可以像小素子一样怀着", "noise"),
        ("还是老宾馆好", "还是老机馆好", "typo"),
    ],
)
def test_evidence_of_new_content(first: str, second: str, expected: str) -> None:
    assert [kind for _, _, kind in stream_kinds(first, second)] == [expected]
