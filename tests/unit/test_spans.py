"""The rules for one differing span: what evidence of new content each class of span needs."""

import pytest

from stream_dedup.engine.lexicon import lexicon
from stream_dedup.engine.meaning import classify, opcodes
from stream_dedup.engine.normalize import Normalizer
from stream_dedup.engine.spans import has_digit, number_kind, own_characters

pytestmark = pytest.mark.unit
NORM = Normalizer()


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
def test_own_characters_are_chinese_characters_no_bigram_of_the_other_text_covers() -> None:
    assert own_characters("好评谢谢", "谢谢你") == [True, True, False, False]
    assert own_characters("ok好评3", "谢谢") == [False, False, True, True, False]
    assert own_characters("", "abc") == []


def test_own_characters_of_a_long_text_are_read_alike() -> None:
    """A text longer than the searched length looks bigrams up in a set: the same answer."""
    short, other = "物流快，好评", "好评谢谢"
    long_ = short * 10
    assert own_characters(long_, other) == own_characters(short, other) * 10


def test_has_digit() -> None:
    assert has_digit("买了3个") and not has_digit("买了三个")


def number_span(first: str, second: str) -> str:
    """`number_kind` of the one differing span of two texts."""
    (span,) = [op for op in opcodes(first, second) if op[0] != "equal"]
    return number_kind(first, second, span, lexicon())


@pytest.mark.parametrize(
    ("first", "second", "kind"),
    [
        ("比赛于1月3日举行", "比赛于1月5日举行", "date"),  # a date unit beside it
        ("会议定在周一召开", "会议定在周三召开", "date"),  # a weekday
        ("会议定在星期一召开", "会议定在星期三召开", "date"),
        ("事故造成3人死亡", "事故造成5人死亡", "number"),
        ("买了三个苹果", "买了五个苹果", "number"),
    ],
)
def test_a_number_beside_a_date_unit_or_in_a_weekday_is_a_date(first: str, second: str,
                                                               kind: str) -> None:
    assert number_span(first, second) == kind


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        # a number written another way, a slip or a comment beside it: the slip decides
        ("满99包邮哦", "满九十九苞邮哦", ["typo"]),
        ("运费是15元吗", "运费是十五圆吗", ["typo"]),
        ("12包装的尺寸", "码住十二包装的尺寸", ["material"]),
        # ... and the number's value or unit still counts
        ("满99包邮哦", "满九十八苞邮哦", ["number"]),
        ("买了3件", "买了三条", ["unit"]),
    ],
)
def test_a_number_written_another_way_is_parted_from_what_changed_beside_it(
        first: str, second: str, expected: list[str]) -> None:
    assert [kind for _, _, kind in stream_kinds(first, second)] == expected
