"""The lexicon's readings of the dictionary: words, segmentation, readings of a character, and the
relations of two words (sound, variant form, region, synonym, polarity)."""

import pypinyin
import pytest

from stream_dedup.engine.lexicon import Lexicon, lexicon

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def lex() -> Lexicon:
    return lexicon()


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
@pytest.mark.parametrize("ch", list("行长乐重和还了着得地都绿女"))
def test_readings_cover_every_reading_of_a_polyphonic_character(lex: Lexicon, ch: str) -> None:
    every = pypinyin.pinyin(ch, heteronym=True, style=pypinyin.Style.NORMAL)[0]
    assert lex.readings(ch) == frozenset(every)
    assert all(r.isascii() and r.isalpha() for r in lex.readings(ch))  # tones taken off


def test_a_non_chinese_character_reads_as_itself(lex: Lexicon) -> None:
    assert lex.readings("a") == frozenset({"a"})


def test_same_sound_shares_a_reading_in_every_place(lex: Lexicon) -> None:
    assert lex.same_sound("章伟", "张伟")
    assert lex.same_sound("银行", "银航")  # 行 reads hang among its readings
    assert not lex.same_sound("章伟", "张三")
    assert not lex.same_sound("章", "张伟")  # lengths differ


def test_word_relations(lex: Lexicon) -> None:
    assert lex.variant("門", "门") and not lex.variant("门", "们")
    assert lex.regional("光碟", "光盘") and not lex.regional("光盘", "光盘")
    assert lex.synonyms("高兴", "快乐") and not lex.synonyms("高兴", "桌子")
    assert (lex.polarity("好"), lex.polarity("差"), lex.polarity("桌子")) == (1, -1, 0)


def test_the_forms_read_ahead_are_openccs_own(lex: Lexicon) -> None:
    from stream_dedup.engine import resources

    folding = resources.Folding()
    for lo, hi in resources._FOLDED_BLOCKS:  # every character of the blocks read ahead
        for ch in map(chr, range(lo, hi + 1)):
            assert lex._forms(ch) == folding(ch), ch
    for ch in ("𡃉", "𠸏", "a", "😀"):  # outside them: converted when met
        assert not resources.folded_ahead(ch) and lex._forms(ch) == folding(ch)
    assert lex._forms("門") == {"门"} and lex._forms("门") == {"门"}


def test_words_and_common_words(lex: Lexicon) -> None:
    assert lex.is_word("北京大学") and not lex.is_word("京大")
    assert lex.is_common("老师")


def test_u_umlaut_reads_as_v(lex: Lexicon) -> None:
    assert lex.readings("旅") == frozenset({"lv"})
    assert lex.readings("绿") == frozenset({"lu", "lv"})


def test_words_at_are_the_span_then_the_covering_words_from_the_left(lex: Lexicon) -> None:
    text = "我们今天去北京大学参观"
    assert lex.words_at(text, 5, 6) == ["北", "北京", "北京大学"]
    assert lex.word_at(text, 5, 6) == "北京大学"
    assert lex.words_at("兲兲兲", 1, 2) == ["兲"]  # no word: the span itself


def test_words_at_are_the_plain_scans(lex: Lexicon) -> None:
    """Spans of texts made of dictionary words, empty ones among them, against the plain scan:
    from each start up to three characters before the span, each end up to three after it, the
    longer dictionary words (count above 0), until a part that is no word's prefix."""
    import random

    def reference(text: str, start: int, end: int) -> list[str]:
        found = [text[start:end]]
        for s in range(max(0, start - 3), start + 1):
            for e in range(end, min(len(text), end + 3) + 1):
                if text[s:e] not in lex.freq:
                    break
                if e - s > end - start and lex.is_word(text[s:e]):
                    found.append(text[s:e])
        return found

    rng = random.Random(7)
    words = [w for w in list(lex.freq)[::500] if lex.is_word(w)]
    for _ in range(300):
        text = "".join(rng.choice(words) for _ in range(rng.randint(1, 6)))
        for start in range(len(text) + 1):
            for end in range(start, min(len(text), start + 4) + 1):
                assert lex.words_at(text, start, end) == reference(text, start, end)


def test_holds_tagged_whenever_a_segment_has_such_a_word(lex: Lexicon) -> None:
    """A text none of whose parts is a word of the tags cuts into no such word."""
    from stream_dedup.engine.lexicon import ENTITY_TAGS

    time = frozenset({"t"})
    assert lex.holds_tagged("去北京", ENTITY_TAGS) and not lex.holds_tagged("去北京", time)
    assert lex.holds_tagged("今天|走", time) and not lex.holds_tagged("好的呢|", ENTITY_TAGS)
    texts = ["我们今天去北京大学参观", "昨天李明在上海", "小王说明天见", "abc北京|12月", "的了|吗"]
    for text in texts:
        for start in range(len(text)):
            for end in range(start + 1, len(text) + 1):
                part = text[start:end]
                for tags in (ENTITY_TAGS, time):
                    if lex.words_tagged(lex.segment(part), tags):
                        assert lex.holds_tagged(part, tags)


def test_names_and_tokens_by_the_tagger(lex: Lexicon) -> None:
    text = "我们今天去北京大学参观"
    assert lex.names_at(text, 5, 6) and not lex.names_at(text, 2, 3)
    assert lex.tokens_at("今天曹劲松来了", 2, 3, frozenset({"nr"})) == [("曹", "nr")]


def test_similar_shape_pairs_each_differing_character(lex: Lexicon) -> None:
    assert lex.similar_shape("未来", "末来") and lex.similar_shape("未", "未")
    assert not lex.similar_shape("未", "天") and not lex.similar_shape("未来", "末")


@pytest.mark.parametrize("ch", ["a", "1", "。", "😀", "\U0002a6a5", "\ue000"])
def test_a_character_outside_the_reading_table_reads_as_pypinyin_reads_it(
    lex: Lexicon, ch: str
) -> None:
    every = pypinyin.pinyin(ch, heteronym=True, style=pypinyin.Style.NORMAL)[0]
    assert lex.readings(ch) == frozenset(every)


def test_the_tags_are_the_taggers_own(lex: Lexicon) -> None:
    import jieba.posseg

    assert lex.tags is jieba.posseg.dt.word_tag_tab
    assert lex.tags == jieba.posseg.POSTokenizer(jieba.dt).word_tag_tab  # read from the file
    assert [(t.word, t.flag) for t in jieba.posseg.cut("李明去了上海")][-1] == ("上海", "ns")



def test_one_character_is_tagged_as_jiebas_tagger_tags_it(lex: Lexicon) -> None:
    """Every character of the basic plane but surrogates (Chinese ones, letters, digits,
    punctuation, spaces, characters the dictionary lacks) and a few beyond it."""
    import jieba.posseg

    characters = [chr(c) for c in range(0x10000) if not 0xD800 <= c < 0xE000]
    for ch in [*characters, "𠀀", "😀", "\ud800"]:
        assert lex.tagged_words(ch) == tuple((t.word, t.flag) for t in jieba.posseg.lcut(ch)), ch
