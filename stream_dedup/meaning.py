"""What differs between two near-identical texts, and whether it changes what they say.

Reprints differ by decoration (removed by normalization), script, typos, material added or cut
(a lead-in, a wrapper, a dropped sentence, a truncation) and clauses in another order. Different
news differs by a number, a date, a name, a negation, an antonym, or two words that trade places.
n-gram similarity cannot tell these apart (a changed number is one bigram), so the two normalized
texts are aligned and every span that differs is classified, in this order:

1. spans that move: the same text deleted in one place and inserted in another is a `reorder`
   of clauses; two short words that trade places are a `swap` ("A beat B" / "B beat A");
2. material added or cut at either edge, or a long span inside (a dropped sentence): `material`;
3. a word replaced by its antonym (`antonym`, from a small general lexicon in
   data/antonyms.txt), checked first because some antonyms sound alike (买/卖);
4. typo-like: the same pronunciation (pypinyin, toneless: input-method typos), or a word of the
   earlier text broken with no dictionary word in its place (jieba's dictionary): `typo`;
5. meaning changes: digits or numeral words (`number`, or `date` with a date unit or a time
   word), a negation inserted or removed (`negation`), a person, place or organisation name
   replaced (`entity`, jieba's dictionary tags nr/ns/nt/nz);
6. anything else short is a `typo`, longer an `edit`.

Separately, `added_passage` finds where the later text puts a passage of its own *inside* the
earlier one (a clause inserted, a phrase rewritten): wrappers, lead-ins, comments and source lines
sit at the edges, typos change a character or two, and cut or moved text brings nothing of its
own, so such a passage is content the earlier text does not carry.

Words are found with jieba's dictionary (the longest dictionary word covering a position), not
by running the segmenter: this runs only on candidate pairs, and must stay cheap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

# difflib's SequenceMatcher compiled (same algorithm, same opcodes), 2-4x faster on our pairs.
from cydifflib import SequenceMatcher

MEANING_CLASSES = ("number", "date", "entity", "negation", "antonym", "swap")

_NUMERALS = frozenset("0123456789零〇一二三四五六七八九十百千万亿两")
_DATE_UNITS = frozenset("年月日号时点分秒周")
_DIGIT_RUN = re.compile(r"\d+")
_WEEKDAY = re.compile(r"(?:星期|礼拜|周)[一二三四五六日天]")
_NEGATIONS = frozenset("不没無无非未别莫勿否")
# Negators that stand alone before a verb or adjective in modern Chinese; the others (无, 非, 莫,
# 勿, 否) negate inside dictionary words (无法, 非法) and are typo-prone on their own.
_LONE_NEGATORS = frozenset("不没未别")
# Words that begin with a negation character without negating anything.
_NOT_NEGATING = frozenset(
    [
        "非常", "无论", "不论", "不管", "不过", "不仅", "不但", "无非",
        "未来", "未免", "不得不", "莫非", "无数", "非凡", "不停", "不断",
    ]
)
_ENTITY_TAGS = frozenset({"nr", "nrt", "nrfg", "ns", "nt", "nz"})
_TIME_TAGS = frozenset({"t"})
_SWAP_MAX = 6  # characters: moved spans up to this long are words trading places, longer clauses
_MATERIAL_MIN = 5  # characters: a longer span added or cut inside the text is material
_TYPO_MAX = 2  # characters: the most a typo changes
_INSIDE = 4  # characters: shared text on each side that puts a span inside a text, off its edges
_CACHED_CUT = 64  # characters: texts up to this long keep their segmentation (bounded memory)
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


class _Lexicon:
    """jieba's dictionary (frequencies and tags), pypinyin, and the antonym pairs, loaded once."""

    def __init__(self) -> None:
        import jieba
        import jieba.posseg
        from pypinyin import lazy_pinyin

        jieba.setLogLevel(60)
        jieba.initialize()
        self.freq = jieba.dt.FREQ
        self.tags = jieba.posseg.dt.word_tag_tab
        self._posseg = jieba.posseg.lcut
        self._cut = jieba.lcut
        self._lazy_pinyin = lazy_pinyin
        self.antonyms: set[tuple[str, str]] = set()
        text = (Path(__file__).parent / "data" / "antonyms.txt").read_text(encoding="utf-8")
        for line in text.splitlines():
            words = line.split("#", 1)[0].split()
            if len(words) == 2:
                self.antonyms |= {(words[0], words[1]), (words[1], words[0])}

    def pinyin(self, text: str) -> tuple[str, ...]:
        """Toneless pinyin, a syllable a character (cached per character)."""
        return tuple(self._syllable(ch) for ch in text)

    @cache  # noqa: B019 - one lexicon per process, never released
    def _syllable(self, ch: str) -> str:
        return self._lazy_pinyin(ch)[0]

    def is_word(self, text: str) -> bool:
        return self.freq.get(text, 0) > 0

    def words_at(self, text: str, start: int, end: int) -> list[str]:
        """Every dictionary word covering text[start:end] (reaching at most 3 characters beyond
        it on either side), and the span itself."""
        found = [text[start:end]]
        freq = self.freq
        for s in range(max(0, start - 3), start + 1):
            for e in range(end, min(len(text), end + 3) + 1):
                count = freq.get(text[s:e])
                if count is None:  # jieba keeps every prefix of a word: no longer word from s
                    break
                if count > 0 and e - s > end - start:
                    found.append(text[s:e])
        return found

    def names_at(self, text: str, start: int, end: int) -> bool:
        """Whether jieba's tagger (HMM on, for names outside the dictionary) reads a person,
        place or organisation name over text[start:end]; run on a small window only."""
        lo = max(0, start - 3)
        at = lo
        for token in self._posseg(text[lo : end + 3]):
            if at < end and at + len(token.word) > start and token.flag in _ENTITY_TAGS:
                return True
            at += len(token.word)
        return False

    def segment(self, text: str) -> tuple[str, ...]:
        """Words by jieba's dictionary (no HMM: fast, and stable between the two texts). Short
        texts are cut once: the spans checked repeat across pairs (the same few hundred on a
        stream), and jieba costs microseconds a character."""
        if len(text) > _CACHED_CUT:
            return tuple(self._cut(text, HMM=False))
        return self._cut_short(text)

    @lru_cache(maxsize=1 << 12)  # noqa: B019 - one lexicon per process, never released
    def _cut_short(self, text: str) -> tuple[str, ...]:
        return tuple(self._cut(text, HMM=False))

    def words_tagged(self, words: tuple[str, ...], tags: frozenset[str]) -> list[str]:
        """The multi-character dictionary words of a `segment` whose tag is one of `tags`."""
        return [w for w in words if len(w) > 1 and self.tags.get(w) in tags]

    def tagged(self, words: list[str], tags: frozenset[str]) -> bool:
        return any(self.tags.get(w) in tags for w in words)

    def word_at(self, text: str, start: int, end: int) -> str:
        """The longest dictionary word covering text[start:end] (at most 3 characters beyond
        it on either side), the leftmost of equally long ones; the span itself when none does."""
        return _longest(self.words_at(text, start, end))


def _longest(words: list[str]) -> str:
    """The `word_at` of a `words_at` list (which holds the span first, then longer words from
    the left): callers that need both look the words up once."""
    return max(words, key=len)


@cache
def _lexicon() -> _Lexicon:
    return _Lexicon()


def warm_up() -> None:
    """Load the dictionaries now (about a second) rather than inside the first batch."""
    _lexicon()


def _has_digit(text: str) -> bool:
    return any(c.isdigit() for c in text)


def _has_numeral(text: str) -> bool:
    return any(c in _NUMERALS for c in text)


def _moved(a: str, b: str, spans: list[tuple[str, int, int, int, int]],
           lex: _Lexicon) -> dict[int, str]:
    """Indexes of spans that are text moved elsewhere: 'swap' when two words trade places,
    'reorder' when one unit (a clause) moved."""
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
                kinds[x] = kinds[y] = "swap" if crossed and word else "reorder"
    return kinds


def _number_kind(a: str, b: str, span: tuple[str, int, int, int, int], lex: _Lexicon) -> str:
    """'date' when the number carries a date unit or sits in a weekday; else 'number'."""
    _, i1, i2, j1, j2 = span
    around = a[max(0, i1 - 2) : i2 + 2] + "|" + b[max(0, j1 - 2) : j2 + 2]
    if _WEEKDAY.search(around) or any(c in _DATE_UNITS for c in around):
        return "date"
    return "number"


def _is_negation(text: str, start: int, end: int, lex: _Lexicon) -> bool:
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
        if len(word) > 1:
            return True
        if text[k] in _LONE_NEGATORS and k + 1 < len(text):
            following = lex.word_at(text, k + 1, k + 2)
            if following.startswith(text[k + 1]) and lex.tags.get(following, "")[:1] in "va":
                return True
    return False


def _negates_next(text: str, at: int, lex: _Lexicon) -> bool:
    """Whether the word after a lone negator is one it can negate: a word of more than one
    character, or a verb, adjective or adverb (不好, 没去, 不太); a typo drops 不 anywhere."""
    following = lex.word_at(text, at, at + 1) if at < len(text) else ""
    if not following.startswith(text[at : at + 1]):
        following = text[at : at + 1]
    return (len(following) > 1 and lex.is_word(following)) or lex.tags.get(following, "")[:1] in (
        "v", "a", "d")


def _replaced_kind(a: str, b: str, span: tuple[str, int, int, int, int], lex: _Lexicon) -> str:
    _, i1, i2, j1, j2 = span
    part_a, part_b = a[i1:i2], b[j1:j2]
    if _has_digit(part_a) and _has_digit(part_b):
        return _number_kind(a, b, span, lex)
    if max(len(part_a), len(part_b)) >= _MATERIAL_MIN:  # a rewritten or cut passage
        return "material" if i1 == 0 or i2 == len(a) or j1 == 0 or j2 == len(b) else "edit"
    words_a, words_b = lex.words_at(a, i1, i2), lex.words_at(b, j1, j2)
    word_a, word_b = _longest(words_a), _longest(words_b)
    if any((x, y) in lex.antonyms for x in words_a for y in words_b):
        return "antonym"  # before pronunciation: 买/卖 sound alike
    if len(part_a) == len(part_b) and lex.pinyin(part_a) == lex.pinyin(part_b):
        return "typo"  # same pronunciation: an input-method typo
    if (len(word_a) > len(part_a) and lex.is_word(word_a)
            and not (len(word_b) > 1 and lex.is_word(word_b))):
        return "typo"  # the earlier text's word is broken, and no word took its place
    if (_has_numeral(part_a) and _has_numeral(part_b)) or _has_digit(part_a + part_b):
        return _number_kind(a, b, span, lex)
    if (lex.tagged(words_a, _TIME_TAGS) and lex.tagged(words_b, _TIME_TAGS)) or (
        _WEEKDAY.search(a[max(0, i1 - 2) : i2]) and _WEEKDAY.search(b[max(0, j1 - 2) : j2])
    ):
        return "date"  # one time word for another (今天/昨天)
    if _is_negation(a, i1, i2, lex) != _is_negation(b, j1, j2, lex):
        return "negation"
    name_a, name_b = lex.tagged(words_a, _ENTITY_TAGS), lex.tagged(words_b, _ENTITY_TAGS)
    word_a_real = len(word_a) > 1 and lex.is_word(word_a)
    word_b_real = len(word_b) > 1 and lex.is_word(word_b)
    whole = min(len(part_a), len(part_b)) >= 2  # typos replace a character, not a word
    if (name_a and name_b) or (whole and ((name_a and word_b_real) or (name_b and word_a_real))):
        return "entity"  # a name replaced by another name, or by another word
    if min(len(part_a), len(part_b)) >= 2 and lex.names_at(a, i1, i2) and lex.names_at(b, j1, j2):
        return "entity"  # names the dictionary lacks, recognised by jieba's tagger
    return "typo" if max(len(part_a), len(part_b)) <= _TYPO_MAX else "edit"


def _added_kind(a: str, b: str, span: tuple[str, int, int, int, int], lex: _Lexicon) -> str:
    """An inserted or deleted span: material at an edge or when long; inside, a digit (or a
    numeral next to another numeral: 二十 / 十) is a number, a negation a negation."""
    op, i1, i2, j1, j2 = span
    text, start, end = (b, j1, j2) if op == "insert" else (a, i1, i2)
    part = text[start:end]
    edge = start == 0 or end == len(text)
    if edge and not (len(part) == 1 and _is_negation(text, start, end, lex)):
        return "material"
    if len(part) >= _MATERIAL_MIN:
        return "material"
    beside = text[start - 1 : start] + text[end : end + 1]
    if any(c.isdigit() for c in part) or (_has_numeral(part) and _has_numeral(beside)):
        return _number_kind(a, b, span, lex)
    if (part in _LONE_NEGATORS and _negates_next(text, end, lex)) or _is_negation(
            text, start, end, lex):
        return "negation"  # a lone 不/没/未/别 inserted or dropped before what it can negate
    return "typo"


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


def _changed_in_material(a: str, b: str, spans: list[Span], lex: _Lexicon) -> list[Span]:
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
    if inside:  # cut once for both classes: a text over _CACHED_CUT is cut again on every call
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


def _reordered(a: str, b: str, spans: list[tuple[str, int, int, int, int]],
               lex: _Lexicon) -> str | None:
    """When b has exactly a's characters in another order: "swap" if words trade places (a
    word replaced by another in the word alignment), "reorder" if a run of words (a clause)
    moved as a whole (only taken out in one place and put in at another)."""
    if len(a) != len(b):
        return None
    # Outside its differing `spans` b is a: it has a's characters exactly when the spans put in
    # what they take out (sorting only those is cheaper on long texts).
    taken = sorted("".join(a[i1:i2] for _, i1, i2, _, _ in spans))
    if taken != sorted("".join(b[j1:j2] for _, _, _, j1, j2 in spans)):
        return None
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


def classify(a: str, b: str) -> list[Span]:
    """Every span in which normalized text `b` differs from normalized text `a`, classified."""
    lex = _lexicon()
    spans = _contained(a, b) or [op for op in opcodes(a, b) if op[0] != "equal"]
    order = _reordered(a, b, spans, lex)
    if order:
        return [Span(op[0], op[1], op[2], op[3], op[4], order) for op in spans]
    moved = _moved(a, b, spans, lex)
    out = []
    for n, span in enumerate(spans):
        judge = _replaced_kind if span[0] == "replace" else _added_kind
        kind = moved.get(n) or judge(a, b, span, lex)
        out.append(Span(span[0], span[1], span[2], span[3], span[4], kind))
    return _changed_in_material(a, b, out, lex)


def _own(x: str, y: str) -> list[bool]:
    """Per character of `x`, whether it is content of x's own: a Chinese character that no
    character bigram of `y` covers. Text that `y` has elsewhere (a moved clause) is not; digits,
    letters and emoji codes never are (the meaning classes and normalization judge those)."""
    pairs = {y[k : k + 2] for k in range(len(y) - 1)}
    own = [bool(_HAN.match(c)) for c in x]
    for k in range(len(x) - 1):
        if x[k : k + 2] in pairs:
            own[k] = own[k + 1] = False
    return own


def added_passage(a: str, b: str, spans: list[Span], min_chars: int) -> Span | None:
    """The first span of `classify(a, b)` where the later text `b` puts a passage of its own
    inside the earlier text `a`: shared text on both sides (not an edge, where wrappers, lead-ins,
    comments and source lines go), more characters of b's own than a typo changes, and at least
    `min_chars` own characters taken out and put in together (a clause inserted, a phrase
    rewritten). None when there is no such span."""
    ends = [0] + [s.i2 for s in spans]
    starts = [s.i1 for s in spans] + [len(a)]
    inside = [s for n, s in enumerate(spans)
              if not (s.changes_meaning or s.kind in ("reorder", "swap"))
              and s.j2 - s.j1 > _TYPO_MAX and min(s.i1 - ends[n], starts[n + 1] - s.i2) >= _INSIDE]
    if not inside:
        return None
    own_a, own_b = _own(a, b), _own(b, a)
    for s in inside:
        later = sum(own_b[s.j1 : s.j2])
        if later > _TYPO_MAX and later + sum(own_a[s.i1 : s.i2]) >= min_chars:
            return s
    return None
