"""The class of one span in which two aligned texts differ, by the rules and in the order that
`meaning` describes (its steps 2 to 7): a replaced span (`replaced_kind`), and one inserted or
deleted (`added_kind`). Spans that moved are `moves`' business; who a span names, `persons`'."""

from __future__ import annotations

import re
from collections.abc import Sequence

from . import numerals
from .lexicon import ENTITY_TAGS, Lexicon, longest
from .normalize import Clauses
from .persons import PERSON_TAGS, PRONOUNS, addressed, is_person, maybe_person, person_at

_NUMERALS = frozenset("0123456789零〇一二三四五六七八九十百千万亿两")
_DATE_UNITS = frozenset("年月日号时点分秒周")
DIGIT_RUN = re.compile(r"\d+")
_WEEKDAY = re.compile(r"(?:星期|礼拜|周)[一二三四五六日天]")
_NEGATIONS = frozenset("不没無无非未别莫勿否唔冇")  # 唔 / 冇: Cantonese not / have not
# Negators that stand alone before a verb or adjective in modern Chinese; the others (无, 非, 莫,
# 勿, 否) negate inside dictionary words (无法, 非法) and are typo-prone on their own.
_LONE_NEGATORS = frozenset("不没未别唔冇")
# Words that begin with a negation character without negating anything.
_NOT_NEGATING = frozenset(
    [
        "非常", "无论", "不论", "不管", "不过", "不仅", "不但", "无非",
        "未来", "未免", "不得不", "莫非", "无数", "非凡", "不停", "不断",
        "未完", "未完待续",  # a truncation marker
    ]
)
# jieba's tags of content words (nouns, verbs, adjectives, names, time words, idioms, set
# phrases, abbreviations): a word of these inserted inside a text adds to what it says, where
# particles, modal words, adverbs, pronouns and conjunctions do not.
_CONTENT_TAGS = frozenset({
    "n", "nr", "nrt", "nrfg", "ns", "nt", "nz", "ng", "nl", "v", "vn", "vd", "vg", "a", "an",
    "ad", "ag", "t", "tg", "s", "i", "l", "j", "eng",
})
TIME_TAGS = frozenset({"t"})
# jieba's tags of particles, modal words, interjections, onomatopoeia and what it cannot read.
_FUNCTION_TAGS = frozenset({"u", "uj", "ul", "uz", "ug", "uv", "ud", "y", "e", "o", "zg", "x"})
# Approximations between a number and its unit: 三百多克, 十几天, 五十余人, 二十来岁.
_APPROXIMATE = frozenset("多余几来")
# Words of quantity that take a measure word as a numeral does: several, half, many (好多天,
# 那么多个月), a few (数月).
_QUANTITY = frozenset("几半多数")
_MEASURE_TAGS = frozenset({"q", "m"})  # jieba's measure words and numeral-like units (克, 吨)
_MATERIAL_MIN = 5  # characters: a longer span added or cut inside the text is material
TYPO_MAX = 2  # characters: the most a typo changes
INSIDE = 4  # characters: shared text on each side that puts a span inside a text, off its edges
_NEIGHBOURHOOD = 6  # characters around a span whose segmentation decides the word that covers it
_SEARCHED = 24  # characters: a shorter text's bigrams are searched for in another, not hashed
# Chinese characters: the unified ideographs and their extension A (compared, not matched: a
# comparison costs a tenth of a regex call, made per character).
_HAN_FROM, _HAN_TO = "\u4e00", "\u9fff"
_EXT_A_FROM, _EXT_A_TO = "\u3400", "\u4dbf"


def has_digit(text: str) -> bool:
    # No letter (a Chinese character is one) is a digit: a part of letters only, most of them,
    # is answered by one call.
    return not text.isalpha() and any(c.isdigit() for c in text)


def _has_numeral(text: str) -> bool:
    return not _NUMERALS.isdisjoint(text)


def _numerals_only(*parts: str) -> bool:
    return all(part and _NUMERALS.issuperset(part) for part in parts)


def number_kind(a: str, b: str, span: tuple[str, int, int, int, int], lex: Lexicon) -> str:
    """'date' when the number carries a date unit or sits in a weekday; else 'number'."""
    _, i1, i2, j1, j2 = span
    around = a[max(0, i1 - 2) : i2 + 2] + "|" + b[max(0, j1 - 2) : j2 + 2]
    if _WEEKDAY.search(around) or any(c in _DATE_UNITS for c in around):
        return "date"
    return "number"


def _is_negation(text: str, start: int, end: int, lex: Lexicon) -> bool:
    """Whether text[start:end] holds a negation that negates: a character that begins a
    dictionary word (不是, 没有, 无法; not 非常, 未来) or a lone negator (不, 没, 未, 别) before a
    verb or adjective."""
    for k in range(start, end):
        if text[k] not in _NEGATIONS:
            continue
        word = next((text[k:e] for e in range(min(len(text), k + 4), k + 1, -1)
                     if lex.is_word(text[k:e])), text[k])
        if word in _NOT_NEGATING:
            continue
        if len(word) > 1 or text[k] in "唔冇":  # Cantonese negators negate alone, before anything
            return True
        if text[k] in _LONE_NEGATORS and k + 1 < len(text):
            following = lex.word_at(text, k + 1, k + 2)
            if following.startswith(text[k + 1]) and lex.tags.get(following, "")[:1] in "va":
                return True
    return False


def _negates_next(text: str, at: int, lex: Lexicon) -> bool:
    """Whether the word after a lone negator is one it can negate: a word of more than one
    character, or a verb, adjective or adverb (不好, 没去, 不太); a typo drops 不 anywhere."""
    following = lex.word_at(text, at, at + 1) if at < len(text) else ""
    if not following.startswith(text[at : at + 1]):
        following = text[at : at + 1]
    return (len(following) > 1 and lex.is_word(following)) or lex.tags.get(following, "")[:1] in (
        "v", "a", "d")


def _same_value(a: str, b: str, span: tuple[str, int, int, int, int]) -> bool | None:
    """Whether the numbers a differing span touches keep their value (4000 / 四千 / 4千): the
    two parts themselves (39 / 三十九 before 一包), else the whole runs of numerals they belong to
    (5000 / 5千). None when the span touches no number on either side, or one that does not read
    as a number."""
    _, i1, i2, j1, j2 = span
    if not (_has_numeral(a[i1:i2]) or _has_numeral(b[j1:j2])):
        return None
    x, y = numerals.value(a[i1:i2]), numerals.value(b[j1:j2])
    if x is not None and x == y:
        return True
    s1, e1 = numerals.run_around(a, i1, i2)
    s2, e2 = numerals.run_around(b, j1, j2)
    x, y = numerals.value(a[s1:e1]), numerals.value(b[s2:e2])
    if x is None or y is None:
        return None
    return x == y


def _beside_number(a: str, b: str, span: tuple[str, int, int, int, int],
                   lex: Lexicon) -> str | None:
    """The class of a replaced span that joins a number written another way to a change next
    to it (是20 / 题二十, 15对 / 十五兑, 12 / 码住十二): the two forms share no character, so the
    alignment cannot part the number from a slip or a comment beside it. When the numerals at one
    end of both parts keep their value, the span is what the rest of it is; None otherwise."""
    _, i1, i2, j1, j2 = span
    part_a, part_b = a[i1:i2], b[j1:j2]
    if not (_has_numeral(part_a) and _has_numeral(part_b)):
        return None
    for at_end in (True, False):
        na, nb = _numeral_end(part_a, at_end), _numeral_end(part_b, at_end)
        if not na or not nb or (na == len(part_a) and nb == len(part_b)):
            continue
        if at_end:
            number = ("replace", i2 - na, i2, j2 - nb, j2)
            rest = (i1, i2 - na, j1, j2 - nb)
        else:
            number = ("replace", i1, i1 + na, j1, j1 + nb)
            rest = (i1 + na, i2, j1 + nb, j2)
        if _same_value(a, b, number):
            r1, r2, s1, s2 = rest
            if r2 > r1 and s2 > s1:
                return replaced_kind(a, b, ("replace", r1, r2, s1, s2), lex)
            return added_kind(a, b, ("insert" if s2 > s1 else "delete", r1, r2, s1, s2), lex,
                              None)
    return None


def _numeral_end(part: str, at_end: bool) -> int:
    """How many numeral characters `part` ends with (`at_end`) or begins with."""
    text = part[::-1] if at_end else part
    return next((k for k, c in enumerate(text) if c not in _NUMERALS), len(text))


def _evidence_of_typo(part_a: str, part_b: str, lex: Lexicon) -> bool:
    """Positive evidence that a replaced span is a slip of the same word: the same sound under
    some reading of each character, a similar shape, or a variant form."""
    return (lex.same_sound(part_a, part_b) or lex.similar_shape(part_a, part_b)
            or lex.variant(part_a, part_b))


def _turned(words_a: list[str], words_b: list[str], pairs: list[tuple[str, str]] | None,
            lex: Lexicon) -> bool:
    """A word replaced by its antonym (the antonym list, any words covering the span), or a word
    replaced by a word of the opposite sentiment (`_word_pairs`: 实惠 / 离谱). `pairs` None:
    not looked for, as no sentiment word covers the span on both sides (`_sentiment_on_both`)."""
    if not lex.antonymous.isdisjoint(words_a) and any(
            (x, y) in lex.antonyms for x in words_a for y in words_b):
        return True
    return any(lex.polarity(x) * lex.polarity(y) < 0 for x, y in pairs or ())


def _sentiment_on_both(words_a: list[str], words_b: list[str], lex: Lexicon) -> bool:
    """Whether words of some sentiment cover the span on both sides: without, no pair of
    `_word_pairs` (words of `words_at`, all of them) has two words of opposite sentiment."""
    return lex.any_polar(words_a) and lex.any_polar(words_b)


def replaced_kind(a: str, b: str, span: tuple[str, int, int, int, int], lex: Lexicon) -> str:
    """A replaced span is harmless only with evidence: a number written another way, a slip of
    the same sound, shape or form, a dictionary word broken into non-words, or a synonym. A
    dictionary word replaced by another is a `word` change; what else differs is classified by
    the meaning classes."""
    _, i1, i2, j1, j2 = span
    part_a, part_b = a[i1:i2], b[j1:j2]
    # (the three number rules read numerals: most spans have none, asked once)
    numeral = _has_numeral(part_a) or _has_numeral(part_b)
    if numeral and _same_value(a, b, span):
        return "form"  # a number written another way (4000 / 四千 / 4千)
    beside = _beside_number(a, b, span, lex) if numeral else None
    if beside is not None:
        return beside  # a slip or a comment next to a number written another way
    if (has_digit(part_a) and has_digit(part_b)) or (numeral and _numerals_only(part_a, part_b)):
        return number_kind(a, b, span, lex)  # a number for another, however long its words
    if max(len(part_a), len(part_b)) >= _MATERIAL_MIN:  # a rewritten or cut passage
        return "material" if i1 == 0 or i2 == len(a) or j1 == 0 or j2 == len(b) else "edit"
    if (_has_numeral(part_a) and _has_numeral(part_b)) or has_digit(part_a + part_b):
        return number_kind(a, b, span, lex)  # numbers before any typo rule
    if _unit_changed(a, b, span, lex) and not _evidence_of_typo(part_a, part_b, lex):
        return "unit"  # another unit or magnitude (克 / 公斤, 天 / 个月)
    words_a, words_b = lex.words_at(a, i1, i2), lex.words_at(b, j1, j2)
    word_a, word_b = longest(words_a), longest(words_b)
    # The word pairs (the costliest step here) before the typo rules only when a sentiment
    # word covers the span on both sides; else when the rules below need them.
    pairs = _word_pairs(a, b, span, lex) if _sentiment_on_both(words_a, words_b, lex) else None
    if _turned(words_a, words_b, pairs, lex):
        return "antonym"  # before pronunciation: 买/卖 sound alike
    if _evidence_of_typo(part_a, part_b, lex):
        return "typo"
    if (lex.tagged(words_a, TIME_TAGS) and lex.tagged(words_b, TIME_TAGS)) or (
        _WEEKDAY.search(a[max(0, i1 - 2) : i2]) and _WEEKDAY.search(b[max(0, j1 - 2) : j2])
    ):
        return "date"  # one time word for another (今天/昨天)
    word_a_real = len(word_a) > 1 and lex.is_word(word_a)
    word_b_real = len(word_b) > 1 and lex.is_word(word_b)
    if addressed(a, i1, i2, lex) or addressed(b, j1, j2, lex):
        return "entity"  # another person addressed: 老马 / 老钱, 小张 / 小戴
    if (maybe_person(part_a, lex) or maybe_person(part_b, lex)) and person_at(
            a, i1, i2, lex) and person_at(b, j1, j2, lex) and not lex.synonyms(part_a, part_b):
        return "entity"  # another speaker or subject: 我 / 他, 你 / 胡娟, 曹劲松 / 付劲松
    if (part_a in PRONOUNS and part_b in lex.surnames) or (
            part_b in PRONOUNS and part_a in lex.surnames):
        return "entity"  # a pronoun for a surname, the subject named: 我这边 / 韩这边
    if (word_a_real and len(word_a) > len(part_a) and not word_b_real
            and len(part_b) <= TYPO_MAX):
        return "typo"  # the earlier text's word is broken by a slip, and no word took its place
    if _is_negation(a, i1, i2, lex) != _is_negation(b, j1, j2, lex):
        return "negation"
    name_a, name_b = lex.tagged(words_a, ENTITY_TAGS), lex.tagged(words_b, ENTITY_TAGS)
    whole = min(len(part_a), len(part_b)) >= 2  # typos replace a character, not a word
    if (name_a and name_b) or (whole and (name_a or (name_b and word_a_real))):
        return "entity"  # a name replaced by another name, or whole by another word or name
    if min(len(part_a), len(part_b)) >= 2 and lex.names_at(a, i1, i2) and lex.names_at(b, j1, j2):
        return "entity"  # names the dictionary lacks, recognised by jieba's tagger
    if pairs is None:
        pairs = _word_pairs(a, b, span, lex)
    if pairs:
        synonyms = any(lex.synonyms(x, y) or lex.regional(x, y) for x, y in pairs)
        return "synonym" if synonyms else "word"
    if not word_a_real and j2 < len(b) and _word_put_in(b, j1, j2, lex):
        return "word"  # a word where the earlier text has none, and no slip's evidence
    return "noise" if max(len(part_a), len(part_b)) <= TYPO_MAX else "edit"


def _word_put_in(text: str, start: int, end: int, lex: Lexicon) -> bool:
    """Whether text[start:end], replacing a part of the earlier text that no word covers (a
    slip's non-word: 腹杂), is itself a whole common dictionary word read as one in place (沉重):
    a word the earlier text does not have. Keyboard noise breaks words; that it makes a whole
    common word of what it replaces is too rare to assume. (At the end a cut text's marker takes
    the place of what it cut: 马上就好了 / 马…全文.)"""
    part = text[start:end]
    return len(part) > 1 and lex.is_common(part) and _cut_as_word(text, start, end, lex)


def _word_pairs(a: str, b: str, span: tuple[str, int, int, int, int],
                lex: Lexicon) -> list[tuple[str, str]]:
    """Pairs of different dictionary words, one of each text, that cover the replaced span with
    the same context around it: a word replaced by a word (实惠 / 离谱, 公斤 / 克). A character
    that only happens to make a word with a neighbour the other text's word does not reach (照片
    becoming 照而 where 而是 is a word) is a broken word, not a new one. Single characters count
    when both are nouns or both adjectives of the dictionary (猫 / 狗, 好 / 差); other
    one-character words, and the rare entries of the dictionary (比出, 十景: mostly segmentation
    by-products), are too often a slip's chance result. Each word of a pair is one of the
    `Lexicon.words_at` of the span in its text."""
    _, i1, i2, j1, j2 = span
    found = []
    freq = lex.freq
    for left in range(min(i1, j1, 3) + 1):
        for right in range(4):
            x, y = a[i1 - left : i2 + right], b[j1 - left : j2 + right]
            if x == y:
                continue
            if not len(x) == len(y) == 1 and (x not in freq or y not in freq):
                break  # jieba keeps every prefix of a word: no longer word from here either
            if _words_in_place(x, y, (a, i1 - left, i2 + right), (b, j1 - left, j2 + right),
                               lex):
                found.append((x, y))
    return found


def _words_in_place(x: str, y: str, at_a: tuple[str, int, int], at_b: tuple[str, int, int],
                    lex: Lexicon) -> bool:
    """Whether `x` (text, start, end of it in the earlier text) and `y` (in the later) are words
    there (see `_word_pairs`): common dictionary words that the segmentation of their
    neighbourhood (a few characters around: words do not reach further) cuts as words."""
    if len(x) == len(y) == 1:
        return lex.tags.get(x) == lex.tags.get(y) in ("n", "a")
    return (len(x) > 1 and len(y) > 1 and lex.is_common(x) and lex.is_common(y)
            and _cut_as_word(*at_a, lex) and _cut_as_word(*at_b, lex))


def _cut_as_word(text: str, start: int, end: int, lex: Lexicon) -> bool:
    lo = max(0, start - _NEIGHBOURHOOD)
    at = lo
    for word in lex.segment(text[lo:end + _NEIGHBOURHOOD]):
        if at == start:
            return at + len(word) == end
        if at > start:
            return False
        at += len(word)
    return False


def _adds_content(part: str, earlier: str, common: Sequence[bool], start: int, lex: Lexicon,
                  continued: bool = False) -> bool:
    """Whether `part`, added at an edge of the earlier text, is a clause of new content rather
    than decoration: at least half as long as the earlier text in characters of its own (in none
    of the earlier text's bigrams, and not `common`: boilerplate the stream repeats, such as a
    stock comment or lead-in), and carrying a content word. Repost comments, sign-offs and
    source lines are short against what they wrap, or said by many messages; an answer or a
    question added to a short stock reply is neither. Content: any word but particles, modal
    words and interjections (哈哈哈哈 adds nothing). A sentence `continued`, the earlier text
    closed by a clause mark and one more clause after it, says more with less: a third of the
    earlier text, more characters than a typo changes (好的呢不客气的哦，还有别的券吗).
    `common` is the later text's mask, `part` begins at `start` in it: read only for a part
    long enough (the engine makes a mask when first read)."""
    least = max(TYPO_MAX + 1, len(earlier) / 3) if continued else max(
        _MATERIAL_MIN, len(earlier) / 2)
    if len(part) < least:
        return False  # too short to hold that many characters of its own
    mine = common[start : start + len(part)]
    own = sum(o and not c for o, c in zip(own_characters(part, earlier), mine, strict=True))
    return own >= least and any(tag not in _FUNCTION_TAGS for _, tag in lex.tagged_words(part))


def _inserted_content(part: str, lex: Lexicon) -> bool:
    """Whether `part`, put inside a text, carries a content word of its own: a noun, verb or
    adjective of two characters or more, or a person's name (a surname alone counts: 彭的), as
    the tagger reads the part on its own (a name outside the dictionary included: 张路的 is
    张路/nr 的/uj); or an attribute put before a noun, a word or name and 的 (姜的热浪)."""
    if any((len(word) > 1 and tag in _CONTENT_TAGS) or tag in PERSON_TAGS
           for word, tag in lex.tagged_words(part)):
        return True
    head = part[:-1]
    return part.endswith("的") and bool(head) and (
        is_person(head, lex) or head in lex.surnames
        or lex.tags.get(head, "")[:1] in ("n", "a", "v"))


def _unit_after_number(text: str, start: int, end: int, lex: Lexicon) -> bool:
    """Whether text[start:end] is (part of) a unit right after a number: after a numeral, or an
    approximation after one (三百多, 十几), or a word of quantity that stands for a number (半天,
    几天, 那么多天, 数月), a measure word or a time unit (克 / 公斤, 天 / 个月, 米 / 厘米, 小时 /
    秒): the number's unit or magnitude."""
    at = start - 1
    if at >= 1 and text[at] in _APPROXIMATE and text[at - 1] in numerals.NUMERAL_CHARS:
        at -= 1
    if at < 0 or start == end or not (text[at] in numerals.NUMERAL_CHARS
                                      or text[at] in _QUANTITY):
        return False
    part = text[start:end]
    words = (part, part[0], lex.word_at(text, start, end))
    return any(lex.tags.get(w) in _MEASURE_TAGS for w in words) or bool(_DATE_UNITS & set(part))


def _unit_changed(a: str, b: str, span: tuple[str, int, int, int, int], lex: Lexicon) -> bool:
    _, i1, i2, j1, j2 = span
    return _unit_after_number(a, i1, i2, lex) or _unit_after_number(b, j1, j2, lex)


def added_kind(a: str, b: str, span: tuple[str, int, int, int, int], lex: Lexicon,
                common: Sequence[bool] | None, clauses: Clauses = ()) -> str:
    """An inserted or deleted span: material at an edge or when long; inside, a digit (or a
    numeral next to another numeral: 二十 / 十) is a number, a negation a negation, and a content
    word inserted (a name, a noun, a verb) adds to what the text says."""
    op, i1, i2, j1, j2 = span
    text, start, end = (b, j1, j2) if op == "insert" else (a, i1, i2)
    part = text[start:end]
    edge = start == 0 or end == len(text)
    # b closes a clause where the earlier text ends, and goes on
    continued = op == "insert" and end == len(text) and start in clauses
    if edge and op == "insert" and common is not None and _adds_content(
            part, a, common, start, lex, continued):
        return "added"  # a clause of new content on a short text (an answer after a reply)
    if edge and not (len(part) == 1 and _is_negation(text, start, end, lex)):
        return "material"
    if len(part) >= _MATERIAL_MIN:
        return "material"
    beside = text[start - 1 : start] + text[end : end + 1]
    if has_digit(part) or (_has_numeral(part) and _has_numeral(beside)):
        same = _same_value(a, b, span)
        return "form" if same else number_kind(a, b, span, lex)
    if (part in _LONE_NEGATORS and _negates_next(text, end, lex)) or _is_negation(
            text, start, end, lex):
        return "negation"  # a lone 不/没/未/别 inserted or dropped before what it can negate
    if _unit_changed(a, b, span, lex):
        return "unit"  # a unit or magnitude put in or dropped (40米 / 40厘米, 克 / 千克)
    if op == "insert" and _inserted_content(part, lex):
        return "inserted"
    return "noise"


def own_characters(x: str, y: str) -> list[bool]:
    """Per character of `x`, whether it is content of x's own: a Chinese character that no
    character bigram of `y` covers. Text that `y` has elsewhere (a moved clause) is not; digits,
    letters and emoji codes never are (the meaning classes and normalization judge those)."""
    # A bigram of y is a substring of y: a short x searches y for each of its few bigrams
    # (C speed), a long one looks them up in y's set.
    found = y if len(x) <= _SEARCHED else {y[k : k + 2] for k in range(len(y) - 1)}
    own = [_HAN_FROM <= c <= _HAN_TO or _EXT_A_FROM <= c <= _EXT_A_TO for c in x]
    for k in range(len(x) - 1):
        if x[k : k + 2] in found:
            own[k] = own[k + 1] = False
    return own
