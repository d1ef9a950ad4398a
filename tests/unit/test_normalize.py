import re

import pytest

from stream_dedup.config import NormalizeSettings
from stream_dedup.engine.normalize import (
    _NFKC_TABLE,
    PARAGRAPH_BREAK,
    Normalizer,
    _content_table,
    _keep_content,
    _per_character_nfkc,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("今天天气很好！", "今天天气很好"),
        ("ＡＢＣ１２３", "abc123"),  # full width and case
        ("這是繁體字", "这是繁体字"),
        ("好评//@小王: 今天天气很好", "好评小王今天天气很好"[:2] + "今天天气很好"),
        ("转发微博", ""),
        ("repost 好评", "好评"),
        ("好评 [转载]via 微博客户端", "好评"),  # the client line a platform adds
        ("好评 来自iPhone客户端", "好评"),
        ("下次不会去住了．（来源：新浪网）", "下次不会去住了"),  # a source line in brackets
        ("资金来源：银行贷款", "资金来源银行贷款"),  # a source named in the text stays
        ("我用微博客户端发的", "我用微博客户端发的"),  # a client named in the text stays
        ("reposted prerepost repost_", "repostedprerepostrepost"),  # the word only
        ("@张三 你好", "你好"),
        ("#话题# 正文【标签】", "正文"),
        ("看这里 http://t.cn/abc123 很好", "看这里很好"),
        ("太好了[哈哈]😂", "太好了"),
        ("a&nbsp;b<br>c&#65292;d", "abcd"),
        ("零\u200b宽", "零宽"),
        ("好_评__a", "好评a"),  # "_" is a word character, not content
        ("&lt;p&gt;好的&lt;/p&gt;", "好的"),  # escaped markup is markup
        ("<p&gt;价格很实惠</p&gt;", "价格很实惠"),  # half escaped
        ("<p&gt;价格很实惠 3<5 的东西 >_<", "价格很实惠35的东西"),  # a "<" that opens no tag
        ("价格<很实惠 > 推荐", "价格很实惠推荐"),
        ('<div class="x">好的</div><br/><!-- c -->', "好的"),
        ("范冰冰成最美（未完）", "范冰冰成最美"),  # a truncation marker in brackets
        ("范冰冰成最美...(未完待续)", "范冰冰成最美"),
        ("未完成的工作", "未完成的工作"),  # ... but not the word
        ("转：还好亲", "还好亲"),  # a repost's lead marker
        ("转自@momo酱：发韵达快递吧", "发韵达快递吧"),
        ("转 //@路人甲:转//@momo酱: 怎么了", "怎么了"),  # forwards with no words of their own
        ("他转：好的", "他转好的"),  # not inside a sentence
    ],
)
def test_each_decoration_class_is_removed(raw: str, expected: str) -> None:
    assert Normalizer().normalize(raw) == expected


def test_steps_can_be_switched_off() -> None:
    keep_tags = Normalizer(NormalizeSettings(tags=False, symbols=False))
    assert "话题" in keep_tags.normalize("#话题# 正文")


def test_batch_equals_single() -> None:
    n = Normalizer()
    texts = ["一", "#二# 三", ""]
    assert n.normalize_batch(texts) == [n.normalize(t) for t in texts]


def test_nfkc_equals_unicodedata() -> None:
    import random
    import unicodedata

    from stream_dedup.engine.normalize import nfkc

    rng = random.Random(7)
    pool = [chr(c) for c in range(0x10000) if not 0xD800 <= c < 0xE000]
    for _ in range(300):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 40)))
        assert nfkc(text) == unicodedata.normalize("NFKC", text)
    assert nfkc("ＡＢＣ１２３，！") == "ABC123,!"


def every_code_point() -> str:
    """Each code point once (lone surrogates too): a per-character step keeps or maps each."""
    return "".join(map(chr, range(0x110000)))


@pytest.mark.parametrize("keep", ["", PARAGRAPH_BREAK])
def test_symbols_step_keeps_what_the_regexes_kept(keep: str) -> None:
    text = every_code_point()
    regexes = re.sub(rf"[^\w\n{keep}]+", "", text).replace("_", "")
    assert _keep_content(_content_table(keep), text) == regexes


def test_per_character_nfkc_is_the_table() -> None:
    text = every_code_point()
    assert _per_character_nfkc(text) == text.translate(_NFKC_TABLE)


@pytest.mark.parametrize(
    ("raw", "text", "ends"),
    [
        ("好评，谢谢！", "好评谢谢", (2,)),
        ("中国队击败了日本队", "中国队击败了日本队", ()),
        ("价格9.5元,很好。。。好的~亲", "价格95元很好好的亲", (5, 7, 9)),  # a number's own mark
        ("1,000元；2:30到", "1000元230到", (5,)),
        ("，开头和结尾。", "开头和结尾", ()),  # an edge ends a clause anyway
        ("@张三：你好、世界 http://t.cn/x 好的", "你好世界好的", (2,)),  # decoration gone first
        ("好 评 谢 谢", "好评谢谢", ()),  # spaces are not clause ends
        ("", "", ()),
    ],
)
def test_clause_ends_are_kept_beside_the_text(raw: str, text: str, ends: tuple[int, ...]) -> None:
    assert Normalizer().with_clauses([raw]) == ([text], [ends])


def test_clause_ends_of_a_batch_equal_one_at_a_time() -> None:
    n = Normalizer()
    texts = ["一，二", "", "三。四！五", "#话题#，六", "七"]
    texts_once, clauses_once = n.with_clauses(texts)
    assert texts_once == n.normalize_batch(texts)
    assert clauses_once == [n.with_clauses([t])[1][0] for t in texts]


def test_no_clause_ends_where_punctuation_stays_or_paragraphs_are_kept() -> None:
    for settings in (NormalizeSettings(symbols=False), NormalizeSettings(paragraphs=True)):
        assert Normalizer(settings).with_clauses(["好评，谢谢"])[1] == [()]
