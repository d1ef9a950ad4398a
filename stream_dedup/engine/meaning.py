"""What differs between two near-identical texts, and whether it changes what they say.

Reprints differ by decoration (removed by normalization), script, typos, material added or cut
(a lead-in, a wrapper, a dropped sentence, a truncation) and clauses in another order. Different
news differs by a number, a date, a name, a negation, an antonym, or two words that trade places.
n-gram similarity cannot tell these apart (a changed number is one bigram), so the two normalized
texts are aligned and every span that differs is classified, in this order:

1. spans that move: the same text deleted in one place and inserted in another is a `reorder`
   of clauses (whole clauses of the later text, by where normalization saw its clauses end,
   whatever their length); two short words that trade places are a `swap` ("A beat B" /
   "B beat A");
2. numbers first: a number written another way (4000 / 四千 / 4千) is a `form`, one whose value
   changes a `number` (a `date` with a date unit or a weekday);
3. material added or cut at either edge, or a long span inside (a dropped sentence): `material`;
4. a word replaced by its antonym or by a word of the opposite sentiment: `antonym`, checked
   before pronunciation because some antonyms sound alike (买/卖);
5. a replaced span is harmless only with evidence (`typo`): the same sound under some reading of
   its characters, a similar shape, a variant form, or a dictionary word of the earlier text
   broken with no dictionary word in its place; a synonym of the replaced word (`synonym`);
6. meaning changes: one time word for another (`date`), a negation inserted or removed
   (`negation`), a person, place or organisation name replaced (`entity`), any other dictionary
   word replaced by a different one (`word`), a content word (a name, noun, verb, adjective)
   inserted inside the text (`inserted`);
7. what is left, short, touches no word on either side: a `typo` (keyboard noise); longer, an
   `edit`.

The resources behind each rule are described in `lexicon.py`.

Separately, `added_passage` finds where the later text puts a passage of its own *inside* the
earlier one (a clause inserted, a phrase rewritten): wrappers, lead-ins, comments and source lines
sit at the edges, typos change a character or two, and cut or moved text brings nothing of its
own, so such a passage is content the earlier text does not carry.

Words are found with jieba's dictionary (the longest dictionary word covering a position), not
by running the segmenter: this runs only on candidate pairs, and must stay cheap.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

# difflib's SequenceMatcher compiled (same algorithm, same opcodes), 2-4x faster on our pairs.
from cydifflib import SequenceMatcher

from . import numerals
from .lexicon import ENTITY_TAGS, Lexicon, lexicon, longest
from .normalize import Clauses

MEANING_CLASSES = ("number", "unit", "date", "entity", "negation", "antonym", "swap", "word",
                   "inserted", "added")

_NUMERALS = frozenset("0123456789零〇一二三四五六七八九十百千万亿两")
_DATE_UNITS = frozenset("年月日号时点分秒周")
_DIGIT_RUN = re.compile(r"\d+")
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
_ENTITY_TAGS = ENTITY_TAGS
# jieba's tags of content words (nouns, verbs, adjectives, names, time words, idioms, set
# phrases, abbreviations): a word of these inserted inside a text adds to what it says, where
# particles, modal words, adverbs, pronouns and conjunctions do not.
_CONTENT_TAGS = frozenset({
    "n", "nr", "nrt", "nrfg", "ns", "nt", "nz", "ng", "nl", "v", "vn", "vd", "vg", "a", "an",
    "ad", "ag", "t", "tg", "s", "i", "l", "j", "eng",
})
_TIME_TAGS = frozenset({"t"})
# Personal pronouns, a closed class (jieba tags 您 zg, the others r): one for another, or for a
# name, is another person.
_PRONOUNS = frozenset(["我", "你", "您", "他", "她", "它", "咱", "我们", "你们", "他们", "她们",
                       "它们", "咱们"])
_PERSON_TAGS = frozenset({"nr", "nrfg", "nrt"})
# jieba's tags of particles, modal words, interjections, onomatopoeia and what it cannot read.
_FUNCTION_TAGS = frozenset({"u", "uj", "ul", "uz", "ug", "uv", "ud", "y", "e", "o", "zg", "x"})
# Approximations between a number and its unit: 三百多克, 十几天, 五十余人, 二十来岁.
_APPROXIMATE = frozenset("多余几来")
# Words of quantity that take a measure word as a numeral does: several, half, many (好多天,
# 那么多个月), a few (数月).
_QUANTITY = frozenset("几半多数")
_MEASURE_TAGS = frozenset({"q", "m"})  # jieba's measure words and numeral-like units (克, 吨)
# Changes that a copy with keyboard noise elsewhere (a character replaced, put in or dropped where
# no word, sound, shape or form explains it) makes by chance as well: a slip that happens to make
# another word. In a text without noise they are what they look like.
_NOISY = frozenset({"word", "inserted", "unit"})
_SWAP_MAX = 6  # characters: moved spans up to this long are words trading places, longer clauses
_MATERIAL_MIN = 5  # characters: a longer span added or cut inside the text is material
_TYPO_MAX = 2  # characters: the most a typo changes
_INSIDE = 4  # characters: shared text on each side that puts a span inside a text, off its edges
_NEIGHBOURHOOD = 6  # characters around a span whose segmentation decides the word that covers it
_SEARCHED = 24  # characters: a shorter text's bigrams are searched for in another, not hashed
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


@dataclass(slots=True)  # not frozen: a frozen init costs 4x, made per pair
class Span:
    """One differing span: `a[i1:i2]` in the first text became `b[j1:j2]` in the second."""

    op: str  # replace, insert, delete
    i1: int
    i2: int
    j1: int
    j2: int
    kind: str  # a class of MEANING_CLASSES, or material, reorder, typo, script, edit

    @property
    def changes_meaning(self) -> bool:
        return self.kind in MEANING_CLASSES


def _common_prefix(a: str, b: str) -> int:
    """Length of the common prefix, by bisection on slice comparisons (C speed)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def opcodes(a: str, b: str) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes for a -> b, with the common prefix and suffix aligned first so the
    quadratic matcher only sees the part that differs."""
    p = _common_prefix(a, b)
    q = _common_prefix(a[p:][::-1], b[p:][::-1])
    inner = SequenceMatcher(None, a[p : len(a) - q], b[p : len(b) - q], autojunk=False)
    ops = [(tag, i1 + p, i2 + p, j1 + p, j2 + p) for tag, i1, i2, j1, j2 in inner.get_opcodes()]
    if p:
        ops.insert(0, ("equal", 0, p, 0, p))
    if q:
        ops.append(("equal", len(a) - q, len(a), len(b) - q, len(b)))
    return ops


def warm_up() -> None:
    """Load the language resources now (about a second) rather than inside the first batch."""
    lexicon()
    numerals.warm_up()


def _has_digit(text: str) -> bool:
    return any(c.isdigit() for c in text)


def _has_numeral(text: str) -> bool:
    return any(c in _NUMERALS for c in text)


def _numerals_only(*parts: str) -> bool:
    return all(part and all(c in _NUMERALS for c in part) for part in parts)


def _moved(a: str, b: str, spans: list[tuple[str, int, int, int, int]],
           lex: Lexicon, clauses: Clauses = ()) -> dict[int, str]:
    """Indexes of spans that are text moved elsewhere: 'swap' when two words trade places,
    'reorder' when one unit (a clause: whole clauses of b by its `clauses`) moved."""
    kinds: dict[int, str] = {}
    for x, (_, xi1, xi2, xj1, xj2) in enumerate(spans):
        for y in range(x + 1, len(spans)):
            _, yi1, yi2, yj1, yj2 = spans[y]
            out_x, in_x, out_y, in_y = a[xi1:xi2], b[xj1:xj2], a[yi1:yi2], b[yj1:yj2]
            if (out_x or in_x) and out_x == in_y and in_x == out_y:
                moved = [t for t in (out_x, in_x) if t]
                word = all(len(t) <= _SWAP_MAX and (lex.is_word(t) or lex.tags.get(t))
                           for t in moved)
                # Two words traded places: crossed replacements, or one word moved past
                # another word (a clause moves past more than a word).
                jumped = yi1 - xi2 if yi1 >= xi2 else xi1 - yi2
                crossed = bool(out_x and in_x) or jumped <= _SWAP_MAX - 2
                whole = _whole_clauses(b, ((xj1, xj2), (yj1, yj2)), clauses)
                kinds[x] = kinds[y] = "swap" if crossed and word and not whole else "reorder"
    return kinds


def _number_kind(a: str, b: str, span: tuple[str, int, int, int, int], lex: Lexicon) -> str:
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


def _evidence_of_typo(part_a: str, part_b: str, lex: Lexicon) -> bool:
    """Positive evidence that a replaced span is a slip of the same word: the same sound under
    some reading of each character, a similar shape, or a variant form."""
    return (lex.same_sound(part_a, part_b) or lex.similar_shape(part_a, part_b)
            or lex.variant(part_a, part_b))


def _turned(words_a: list[str], words_b: list[str], pairs: list[tuple[str, str]],
            lex: Lexicon) -> bool:
    """A word replaced by its antonym (the antonym list, any words covering the span), or a word
    replaced by a word of the opposite sentiment (`_word_pairs`: 实惠 / 离谱)."""
    if any((x, y) in lex.antonyms for x in words_a for y in words_b):
        return True
    return any(lex.polarity(x) * lex.polarity(y) < 0 for x, y in pairs)


def _replaced_kind(a: str, b: str, span: tuple[str, int, int, int, int], lex: Lexicon) -> str:
    """A replaced span is harmless only with evidence: a number written another way, a slip of
    the same sound, shape or form, a dictionary word broken into non-words, or a synonym. A
    dictionary word replaced by another is a `word` change; what else differs is classified by
    the meaning classes."""
    _, i1, i2, j1, j2 = span
    part_a, part_b = a[i1:i2], b[j1:j2]
    if _same_value(a, b, span):
        return "form"  # a number written another way (4000 / 四千 / 4千)
    if (_has_digit(part_a) and _has_digit(part_b)) or _numerals_only(part_a, part_b):
        return _number_kind(a, b, span, lex)  # a number for another, however long its words
    if max(len(part_a), len(part_b)) >= _MATERIAL_MIN:  # a rewritten or cut passage
        return "material" if i1 == 0 or i2 == len(a) or j1 == 0 or j2 == len(b) else "edit"
    if (_has_numeral(part_a) and _has_numeral(part_b)) or _has_digit(part_a + part_b):
        return _number_kind(a, b, span, lex)  # numbers before any typo rule
    if _unit_changed(a, b, span, lex) and not _evidence_of_typo(part_a, part_b, lex):
        return "unit"  # another unit or magnitude (克 / 公斤, 天 / 个月)
    words_a, words_b = lex.words_at(a, i1, i2), lex.words_at(b, j1, j2)
    word_a, word_b = longest(words_a), longest(words_b)
    pairs = _word_pairs(a, b, span, lex)
    if _turned(words_a, words_b, pairs, lex):
        return "antonym"  # before pronunciation: 买/卖 sound alike
    if _evidence_of_typo(part_a, part_b, lex):
        return "typo"
    if (lex.tagged(words_a, _TIME_TAGS) and lex.tagged(words_b, _TIME_TAGS)) or (
        _WEEKDAY.search(a[max(0, i1 - 2) : i2]) and _WEEKDAY.search(b[max(0, j1 - 2) : j2])
    ):
        return "date"  # one time word for another (今天/昨天)
    word_a_real = len(word_a) > 1 and lex.is_word(word_a)
    word_b_real = len(word_b) > 1 and lex.is_word(word_b)
    if _addressed(a, i1, i2, lex) or _addressed(b, j1, j2, lex):
        return "entity"  # another person addressed: 老马 / 老钱, 小张 / 小戴
    if (_maybe_person(part_a, lex) or _maybe_person(part_b, lex)) and _person_at(
            a, i1, i2, lex) and _person_at(b, j1, j2, lex) and not lex.synonyms(part_a, part_b):
        return "entity"  # another speaker or subject: 我 / 他, 你 / 胡娟, 曹劲松 / 付劲松
    if (part_a in _PRONOUNS and part_b in lex.surnames) or (
            part_b in _PRONOUNS and part_a in lex.surnames):
        return "entity"  # a pronoun for a surname, the subject named: 我这边 / 韩这边
    if (word_a_real and len(word_a) > len(part_a) and not word_b_real
            and len(part_b) <= _TYPO_MAX):
        return "typo"  # the earlier text's word is broken by a slip, and no word took its place
    if _is_negation(a, i1, i2, lex) != _is_negation(b, j1, j2, lex):
        return "negation"
    name_a, name_b = lex.tagged(words_a, _ENTITY_TAGS), lex.tagged(words_b, _ENTITY_TAGS)
    whole = min(len(part_a), len(part_b)) >= 2  # typos replace a character, not a word
    if (name_a and name_b) or (whole and (name_a or (name_b and word_a_real))):
        return "entity"  # a name replaced by another name, or whole by another word or name
    if min(len(part_a), len(part_b)) >= 2 and lex.names_at(a, i1, i2) and lex.names_at(b, j1, j2):
        return "entity"  # names the dictionary lacks, recognised by jieba's tagger
    if pairs:
        synonyms = any(lex.synonyms(x, y) or lex.regional(x, y) for x, y in pairs)
        return "synonym" if synonyms else "word"
    if not word_a_real and j2 < len(b) and _word_put_in(b, j1, j2, lex):
        return "word"  # a word where the earlier text has none, and no slip's evidence
    return "noise" if max(len(part_a), len(part_b)) <= _TYPO_MAX else "edit"


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
    by-products), are too often a slip's chance result."""
    _, i1, i2, j1, j2 = span
    found = []
    for left in range(4):
        for right in range(4):
            x, y = a[i1 - left : i2 + right], b[j1 - left : j2 + right]
            if i1 - left < 0 or j1 - left < 0 or x == y:
                continue
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


def _adds_content(part: str, earlier: str, common: Sequence[bool], lex: Lexicon,
                  continued: bool = False) -> bool:
    """Whether `part`, added at an edge of the earlier text, is a clause of new content rather
    than decoration: at least half as long as the earlier text in characters of its own (in none
    of the earlier text's bigrams, and not `common`: boilerplate the stream repeats, such as a
    stock comment or lead-in), and carrying a content word. Repost comments, sign-offs and
    source lines are short against what they wrap, or said by many messages; an answer or a
    question added to a short stock reply is neither. Content: any word but particles, modal
    words and interjections (哈哈哈哈 adds nothing). A sentence `continued`, the earlier text
    closed by a clause mark and one more clause after it, says more with less: a third of the
    earlier text, more characters than a typo changes (好的呢不客气的哦，还有别的券吗)."""
    own = sum(o and not c for o, c in zip(_own(part, earlier), common, strict=True))
    least = max(_TYPO_MAX + 1, len(earlier) / 3) if continued else max(
        _MATERIAL_MIN, len(earlier) / 2)
    return own >= least and any(tag not in _FUNCTION_TAGS for _, tag in lex.tagged_words(part))


def _person(part: str, lex: Lexicon) -> bool:
    """Whether `part` names a person: a personal pronoun, a person's name as the tagger reads
    the part on its own, a surname alone by the dictionary (彭) or in an address (小史, 老黎:
    `_address`)."""
    if part in _PRONOUNS or _address(part, lex) or any(
            tag in _PERSON_TAGS for _, tag in lex.tagged_words(part)):
        return True
    return len(part) == 1 and lex.tags.get(part) in _PERSON_TAGS


def _address(word: str, lex: Lexicon) -> bool:
    """Whether `word` is 老 or 小 and a surname (`Lexicon.surnames`) that the dictionary does not
    make a common word of another kind with it (老师, 小心, 老马 "old horse" are words): how
    Chinese addresses a person (老钱, 小戴), a productive form the dictionary cannot list."""
    return (len(word) == 2 and word[0] in "老小" and word[1] in lex.surnames
            and (lex.tags.get(word) in _PERSON_TAGS or not lex.is_common(word)))


def _addressed(text: str, start: int, end: int, lex: Lexicon) -> bool:
    """Whether text[start:end] is the one character after 老 or 小 of a person's address, in no
    longer word (小王子 is a title)."""
    return (end - start == 1 and start > 0 and _address(text[start - 1 : end], lex)
            and len(lex.word_at(text, start - 1, end)) <= 2)


def _maybe_person(part: str, lex: Lexicon) -> bool:
    """A cheap test before the tagger: a pronoun, or a character the dictionary tags as a name."""
    return part in _PRONOUNS or any(lex.tags.get(c) in _PERSON_TAGS for c in part)


def _person_at(text: str, start: int, end: int, lex: Lexicon) -> bool:
    """Whether text[start:end] names a person (`_person`), or the tagger reads a person's name
    over it in its sentence (a surname in a full name: 曹劲松)."""
    return _person(text[start:end], lex) or bool(lex.tokens_at(text, start, end, _PERSON_TAGS))


def _inserted_content(part: str, lex: Lexicon) -> bool:
    """Whether `part`, put inside a text, carries a content word of its own: a noun, verb or
    adjective of two characters or more, or a person's name (a surname alone counts: 彭的), as
    the tagger reads the part on its own (a name outside the dictionary included: 张路的 is
    张路/nr 的/uj); or an attribute put before a noun, a word or name and 的 (姜的热浪)."""
    if any((len(word) > 1 and tag in _CONTENT_TAGS) or tag in _PERSON_TAGS
           for word, tag in lex.tagged_words(part)):
        return True
    head = part[:-1]
    return part.endswith("的") and bool(head) and (
        _person(head, lex) or head in lex.surnames or lex.tags.get(head, "")[:1] in ("n", "a", "v"))


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


def _added_kind(a: str, b: str, span: tuple[str, int, int, int, int], lex: Lexicon,
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
            part, a, common[start:end], lex, continued):
        return "added"  # a clause of new content on a short text (an answer after a reply)
    if edge and not (len(part) == 1 and _is_negation(text, start, end, lex)):
        return "material"
    if len(part) >= _MATERIAL_MIN:
        return "material"
    beside = text[start - 1 : start] + text[end : end + 1]
    if any(c.isdigit() for c in part) or (_has_numeral(part) and _has_numeral(beside)):
        same = _same_value(a, b, span)
        return "form" if same else _number_kind(a, b, span, lex)
    if (part in _LONE_NEGATORS and _negates_next(text, end, lex)) or _is_negation(
            text, start, end, lex):
        return "negation"  # a lone 不/没/未/别 inserted or dropped before what it can negate
    if _unit_changed(a, b, span, lex):
        return "unit"  # a unit or magnitude put in or dropped (40米 / 40厘米, 克 / 千克)
    if op == "insert" and _inserted_content(part, lex):
        return "inserted"
    return "noise"


def _contained(a: str, b: str) -> list[tuple[str, int, int, int, int]]:
    """The edge spans when one text contains the other (no alignment needed), else []."""
    if a in b:
        at = b.index(a)
        spans = [("insert", 0, 0, 0, at), ("insert", len(a), len(a), at + len(a), len(b))]
    elif b in a:
        at = a.index(b)
        spans = [("delete", 0, at, 0, 0), ("delete", at + len(b), len(a), len(b), len(b))]
    else:
        return []
    return [span for span in spans if span[2] > span[1] or span[4] > span[3]]


def _changed_in_material(a: str, b: str, spans: list[Span], lex: Lexicon) -> list[Span]:
    """Meaning changes hidden in material or a reordering: when the numbers, names or time
    words taken out and those put in both exist and differ, the benign spans that carry them
    are number (date), entity or date changes. Material only added or only dropped, or moved
    unchanged, stays benign."""
    benign = [s for s in spans if not s.changes_meaning]
    taken = "|".join(a[s.i1 : s.i2] for s in benign)
    put = "|".join(b[s.j1 : s.j2] for s in benign)
    if not taken.strip("|") or not put.strip("|"):
        return spans
    kinds: dict[int, str] = {}
    if _differ(_DIGIT_RUN.findall(taken), _DIGIT_RUN.findall(put)):
        for s in benign:
            if _has_digit(a[s.i1 : s.i2] + b[s.j1 : s.j2]):
                kinds[id(s)] = _number_kind(a, b, (s.op, s.i1, s.i2, s.j1, s.j2), lex)
    # Lead-ins and wrappers name their sources; one-character changes are the spans' own business.
    inside = [s for s in benign if not _at_edge(a, b, s) and max(s.i2 - s.i1, s.j2 - s.j1) > 1]
    if inside:  # cut once for both classes: a long text is cut again on every call
        taken_words = lex.segment("|".join(a[s.i1 : s.i2] for s in inside))
        put_words = lex.segment("|".join(b[s.j1 : s.j2] for s in inside))
        for tags, kind in ((_ENTITY_TAGS, "entity"), (_TIME_TAGS, "date")):
            if _differ(lex.words_tagged(taken_words, tags), lex.words_tagged(put_words, tags)):
                for s in inside:
                    here = a[s.i1 : s.i2] + "|" + b[s.j1 : s.j2]
                    if id(s) not in kinds and lex.words_tagged(lex.segment(here), tags):
                        kinds[id(s)] = kind
    if not kinds:
        return spans
    return [Span(s.op, s.i1, s.i2, s.j1, s.j2, kinds[id(s)]) if id(s) in kinds else s
            for s in spans]


def _at_edge(a: str, b: str, s: Span) -> bool:
    return s.op != "replace" and (s.i1 == 0 or s.j1 == 0 or s.i2 == len(a) or s.j2 == len(b))


def _differ(out: list[str], put: list[str]) -> bool:
    return bool(out) and bool(put) and sorted(out) != sorted(put)


def _whole_clauses(b: str, parts: tuple[tuple[int, int], ...], clauses: Clauses) -> bool:
    """Whether every non-empty b[j1:j2] of `parts` begins and ends where a clause of b does
    (an edge of b, or one of its `clauses` ends): moved text that is whole clauses."""
    if not clauses:
        return False
    bounds = {0, len(b), *clauses}
    return all(j1 in bounds and j2 in bounds for j1, j2 in parts if j2 > j1)


def _clauses_rearranged(a: str, b: str, clauses: Clauses) -> bool:
    """Whether `a` is b's clauses (b cut at its `clauses` ends) put together in another order:
    clauses moved, which says the same. Each step takes the longest clause left that `a`
    continues with (clauses that are prefixes of one another are rare and short)."""
    if not clauses:
        return False
    bounds = (0, *clauses, len(b))
    left = sorted((b[s:e] for s, e in pairwise(bounds)), key=len, reverse=True)
    at = 0
    while left:
        piece = next((p for p in left if a.startswith(p, at)), None)
        if piece is None:
            return False
        left.remove(piece)
        at += len(piece)
    return at == len(a)


def _clause_shuffled(a: str, b: str, clauses: Clauses) -> tuple[str, str] | None:
    """The first clause of b (by its `clauses` ends) that `a` does not hold as it stands, with
    the stretch of `a` that has its characters in another order (where the clause stands in b,
    else the first such): words that traded places inside one clause, which may itself have
    moved. None when there is no such clause."""
    if not clauses:
        return None
    for start, end in pairwise((0, *clauses, len(b))):
        piece = b[start:end]
        if piece in a:
            continue
        need, size = Counter(piece), end - start
        if Counter(a[start:end]) == need:
            return a[start:end], piece
        window = Counter(a[:size])
        for k in range(len(a) - size + 1):
            if k:
                window[a[k - 1]] -= 1
                window[a[k + size - 1]] += 1
            if window == need:
                return a[k : k + size], piece
        return None
    return None


def _reordered(a: str, b: str, spans: list[tuple[str, int, int, int, int]],
               lex: Lexicon, clauses: Clauses = ()) -> str | None:
    """When b has exactly a's characters in another order: "reorder" if b's clauses (by its
    `clauses` ends) are a's text rearranged; else "swap" if words trade places (a word replaced
    by another in the word alignment), "reorder" if a run of words (a clause) moved as a whole
    (only taken out in one place and put in at another)."""
    if len(a) != len(b):
        return None
    # Outside its differing `spans` b is a: it has a's characters exactly when the spans put in
    # what they take out (sorting only those is cheaper on long texts).
    taken = sorted("".join(a[i1:i2] for _, i1, i2, _, _ in spans))
    if taken != sorted("".join(b[j1:j2] for _, _, _, j1, j2 in spans)):
        return None
    if _clauses_rearranged(a, b, clauses):
        return "reorder"  # before segmenting: words do not cross a clause end
    a, b = _clause_shuffled(a, b, clauses) or (a, b)  # judged alone, wherever the clause went
    words_a, words_b = lex.segment(a), lex.segment(b)
    ops = [op for op in SequenceMatcher(None, words_a, words_b, autojunk=False).get_opcodes()
           if op[0] != "equal"]
    if any(tag == "replace" and i2 - i1 == j2 - j1 == 1 for tag, i1, i2, j1, j2 in ops):
        return "swap"  # one word where another stood, and that one elsewhere
    if len(ops) == 2 and all(max(i2 - i1, j2 - j1) <= 2 for _, i1, i2, j1, j2 in ops):
        (_, i1, i2, _, _), (_, k1, k2, _, _) = ops
        if max(k1 - i2, i1 - k2) <= 2:  # a word moved past a word or two: they traded places
            return "swap"
    return "reorder"


def classify(a: str, b: str, common: Sequence[bool] | None = None,
             clauses: Clauses = ()) -> list[Span]:
    """Every span in which normalized text `b` differs from normalized text `a`, classified.
    `common`: which characters of `b` the stream repeats (`commonness`); without it, what is
    added at an edge is material. `clauses`: where b's clauses end (`Normalizer.with_clauses`);
    without them a moved clause of a word or two reads as words that trade places."""
    lex = lexicon()
    spans = _contained(a, b) or [op for op in opcodes(a, b) if op[0] != "equal"]
    order = _reordered(a, b, spans, lex, clauses)
    if order:
        return [Span(op[0], op[1], op[2], op[3], op[4], order) for op in spans]
    moved = _moved(a, b, spans, lex, clauses)
    out = []
    for n, span in enumerate(spans):
        kind = moved.get(n) or (_replaced_kind(a, b, span, lex) if span[0] == "replace"
                                 else _added_kind(a, b, span, lex, common, clauses))
        out.append(Span(span[0], span[1], span[2], span[3], span[4], kind))
    if any(s.kind == "noise" for s in out):
        out = [Span(s.op, s.i1, s.i2, s.j1, s.j2, "noise") if s.kind in _NOISY else s for s in out]
    return _changed_in_material(a, b, out, lex)


# Spans that differ with evidence that they say the same: a slip of sound, shape or form, a
# number written another way, a synonym.
_EXPLAINED = frozenset({"typo", "form", "synonym"})
# What very short chat lines put around what they say without changing it: sentence-final and
# modal particles, interjections, terms of address and greetings. A closed class, listed: a
# tagger's guess (jieba reads Cantonese 唔 "not" and 係 "be" as particles) is not evidence here.
# Not the particles that make a yes-no question (吗, 么, Cantonese 咩): 是的 / 是的吗 asks.
_CHAT_DECORATION = frozenset([
    "的", "了", "呢", "吧", "啊", "呀", "啦", "嘛", "哦", "喔", "噢", "哈", "哒", "滴",
    "咯", "哟", "哇", "嗯", "唉", "诶", "欸", "哈哈", "呵呵", "嘻嘻", "嘿嘿", "嗯嗯", "哦哦",
    "哎", "哎呀", "哎哟", "咦",
    # Cantonese final particles and interjections (after the conversion to simplified script)
    "喇", "嚹", "囖", "吖", "喎", "𡃉", "㗎", "嘅", "噃", "啫", "咋", "𠸏", "噉", "哎吔", "吔",
    "亲", "亲亲", "亲爱的", "您好", "你好", "客官", "在吗", "在的",
])


def unexplained(a: str, b: str, spans: list[Span]) -> int:
    """Characters of the spans that differ without evidence (noise, edits, passages inside the
    text): what a short copy may hold little of. Meaning changes count as explained (the pair is
    aligned; its meaning check decides); so does material at the edges when the later text only
    adds it (a wrapper, a comment) or only cuts it (a truncation), not when it cuts at one edge
    and adds at another (two texts that only overlap)."""
    edges = [s for s in spans if s.kind == "material" and _at_edge(a, b, s)]
    one_way = all(s.op == "insert" for s in edges) or all(s.op == "delete" for s in edges)
    return sum(max(s.i2 - s.i1, s.j2 - s.j1) for s in spans
               if s.kind not in _EXPLAINED and s.kind not in MEANING_CLASSES
               and not (one_way and s in edges))


def decoration_only(a: str, b: str, spans: list[Span], common: Sequence[bool] | None) -> bool:
    """Whether every span of a very short pair is particles, interjections and terms of address
    added or dropped (好的亲 / 好的呢亲, 返多少 / 返多少亲), what the stream repeats put at an edge
    (a repost comment: mark, 收藏了), a number's form, or a single same-sound slip of one
    character in a text of four characters or more: what a few characters may differ by and still
    say the same. A word broken or replaced is not (科大 / 咁大), nor a shape's likeness
    (上 / 今)."""
    lex = lexicon()
    slips = 0
    for s in spans:
        if s.kind == "form":
            continue
        if s.kind in ("typo", "synonym"):
            # one slip of the same sound (an input method's): what else a few characters may
            # differ by is too much of them
            slips += 1 if s.kind == "typo" and lex.same_sound(a[s.i1:s.i2], b[s.j1:s.j2]) else 2
            continue
        if s.op == "replace":
            return False
        part = b[s.j1:s.j2] if s.op == "insert" else a[s.i1:s.i2]
        if s.op == "insert" and common is not None and _at_edge(a, b, s) and all(
                common[s.j1:s.j2]):
            continue
        if not all(word in _CHAT_DECORATION for word in lex.segment(part)):
            return False
    return slips == 0 or (slips == 1 and min(len(a), len(b)) >= 4)


def _own(x: str, y: str) -> list[bool]:
    """Per character of `x`, whether it is content of x's own: a Chinese character that no
    character bigram of `y` covers. Text that `y` has elsewhere (a moved clause) is not; digits,
    letters and emoji codes never are (the meaning classes and normalization judge those)."""
    # A bigram of y is a substring of y: a short x searches y for each of its few bigrams
    # (C speed), a long one looks them up in y's set.
    found = y if len(x) <= _SEARCHED else {y[k : k + 2] for k in range(len(y) - 1)}
    own = [bool(_HAN.match(c)) for c in x]
    for k in range(len(x) - 1):
        if x[k : k + 2] in found:
            own[k] = own[k + 1] = False
    return own


def added_passage(a: str, b: str, spans: list[Span], min_chars: int) -> Span | None:
    """The first span of `classify(a, b)` where the later text `b` puts a passage of its own
    inside the earlier text `a`: shared text on both sides (not an edge, where wrappers, lead-ins,
    comments and source lines go), more characters of b's own than a typo changes, and at least
    `min_chars` own characters taken out and put in together (a clause inserted, a phrase
    rewritten; not a span explained as the same words: a number written another way,
    一百六十八 for 168). None when there is no such span."""
    ends = [0] + [s.i2 for s in spans]
    starts = [s.i1 for s in spans] + [len(a)]
    inside = [s for n, s in enumerate(spans)
              if not (s.changes_meaning or s.kind in ("reorder", "swap") or s.kind in _EXPLAINED)
              and s.j2 - s.j1 > _TYPO_MAX and min(s.i1 - ends[n], starts[n + 1] - s.i2) >= _INSIDE]
    if not inside:
        return None
    own_a, own_b = _own(a, b), _own(b, a)
    for s in inside:
        later = sum(own_b[s.j1 : s.j2])
        if later > _TYPO_MAX and later + sum(own_a[s.i1 : s.i2]) >= min_chars:
            return s
    return None
