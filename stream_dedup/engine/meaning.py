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

This module aligns the texts and puts the classes together; the rules for one span are in
`spans` (who a span names: `persons`), those for text moved in `moves`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# difflib's SequenceMatcher compiled (same algorithm, same opcodes), 2-4x faster on our pairs.
from cydifflib import SequenceMatcher

from . import numerals, tagger
from .lexicon import ENTITY_TAGS, Lexicon, lexicon
from .moves import moved_spans, reordered
from .normalize import Clauses
from .spans import (
    DIGIT_RUN,
    INSIDE,
    TIME_TAGS,
    TYPO_MAX,
    added_kind,
    has_digit,
    number_kind,
    own_characters,
    replaced_kind,
)

MEANING_CLASSES = ("number", "unit", "date", "entity", "negation", "antonym", "swap", "word",
                   "inserted", "added")
# Changes that a copy with keyboard noise elsewhere (a character replaced, put in or dropped where
# no word, sound, shape or form explains it) makes by chance as well: a slip that happens to make
# another word. In a text without noise they are what they look like.
_NOISY = frozenset({"word", "inserted", "unit"})
_NAMED = ENTITY_TAGS | TIME_TAGS  # the tags of the words `_changed_in_material` compares


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
    """Length of the common prefix, by bisection on prefix tests (C speed)."""
    if not a or not b or a[0] != b[0]:
        return 0  # most texts that differ at the start differ in their first character
    lo, hi = 1, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if b.startswith(a[:mid]):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str, most: int) -> int:
    """Length of the common suffix, at most `most`, as `_common_prefix` finds a prefix."""
    if not most or a[-1] != b[-1]:
        return 0
    lo, hi = 1, most
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if b.endswith(a[len(a) - mid :]):
            lo = mid
        else:
            hi = mid - 1
    return lo


def opcodes(a: str, b: str) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes for a -> b, with the common prefix and suffix aligned first so the
    quadratic matcher only sees the part that differs."""
    p = _common_prefix(a, b)
    q = _common_suffix(a, b, min(len(a), len(b)) - p)
    x, y = a[p : len(a) - q], b[p : len(b) - q]
    # (a character at either end of x found in y: they share one, no set built)
    if (x or y) and (not x or not y or (
            x[0] not in y and x[-1] not in y and set(x).isdisjoint(y))):
        # Nothing in common: the matcher finds no block and answers one span, as here.
        tag = "replace" if x and y else "insert" if y else "delete"
        ops = [(tag, p, len(a) - q, p, len(b) - q)]
    else:
        inner = SequenceMatcher(None, x, y, autojunk=False)
        ops = [(tag, i1 + p, i2 + p, j1 + p, j2 + p)
               for tag, i1, i2, j1, j2 in inner.get_opcodes()]
    if p:
        ops.insert(0, ("equal", 0, p, 0, p))
    if q:
        ops.append(("equal", len(a) - q, len(a), len(b) - q, len(b)))
    return ops


def warm_up() -> None:
    """Load the language resources now (about a second) rather than inside the first batch."""
    lexicon()
    tagger.warm_up()
    numerals.warm_up()


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


def _differing(a: str, b: str, lex: Lexicon) -> list[tuple[str, int, int, int, int]]:
    """The spans of `opcodes` where the texts differ, a replaced one at an edge parted by
    `_slip_beside_edge`."""
    spans = []
    for op in opcodes(a, b):
        if op[0] == "replace":
            spans.extend(_slip_beside_edge(a, b, op, lex))
        elif op[0] != "equal":
            spans.append(op)
    return spans


def _slip_beside_edge(a: str, b: str, op: tuple[str, int, int, int, int],
                      lex: Lexicon) -> list[tuple[str, int, int, int, int]]:
    """An edge's replaced span parted into what one text adds at the edge and a slip next to the
    shared text (限购一瓶 / 转收藏了线购一瓶: a repost comment, then 线 for 限): the alignment
    cannot tell the comment from the slip, which shares no character with what it replaces. Only
    when the characters next to the shared text are a slip of sound, shape or form of the other
    text's (at most `TYPO_MAX`); else the span as it is."""
    tag, i1, i2, j1, j2 = op
    n = min(i2 - i1, j2 - j1)
    if tag != "replace" or i2 - i1 == j2 - j1 or n > TYPO_MAX:
        return [op]
    rest = "insert" if j2 - j1 > n else "delete"
    if i1 == 0 and j1 == 0:  # at the start: the edge's own text first
        x, y = a[i2 - n : i2], b[j2 - n : j2]
        parts = [(rest, i1, i2 - n, j1, j2 - n), ("replace", i2 - n, i2, j2 - n, j2)]
    elif i2 == len(a) and j2 == len(b):  # at the end: the edge's own text last
        x, y = a[i1 : i1 + n], b[j1 : j1 + n]
        parts = [("replace", i1, i1 + n, j1, j1 + n), (rest, i1 + n, i2, j1 + n, j2)]
    else:
        return [op]
    if lex.same_sound(x, y) or lex.similar_shape(x, y) or lex.variant(x, y):
        return parts
    return [op]


def _changed_in_material(a: str, b: str, spans: list[Span], lex: Lexicon) -> list[Span]:
    """Meaning changes hidden in material or a reordering: when the numbers, names or time
    words taken out and those put in both exist and differ, the benign spans that carry them
    are number (date), entity or date changes. Material only added or only dropped, or moved
    unchanged, stays benign."""
    ops = {s.op for s in spans}
    if len(ops) < 2 and "replace" not in ops:
        return spans  # material only added or only cut, as most pairs are: nothing taken for it
    benign = [s for s in spans if s.kind not in MEANING_CLASSES]
    taken = "|".join([a[s.i1 : s.i2] for s in benign])
    put = "|".join([b[s.j1 : s.j2] for s in benign])
    if not taken.strip("|") or not put.strip("|"):
        return spans
    kinds: dict[int, str] = {}
    if _differ(DIGIT_RUN.findall(taken), DIGIT_RUN.findall(put)):
        for s in benign:
            if has_digit(a[s.i1 : s.i2] + b[s.j1 : s.j2]):
                kinds[id(s)] = number_kind(a, b, (s.op, s.i1, s.i2, s.j1, s.j2), lex)
    # Lead-ins and wrappers name their sources; one-character changes are the spans' own business.
    inside = [s for s in benign if (s.i2 - s.i1 > 1 or s.j2 - s.j1 > 1) and not _at_edge(a, b, s)]
    taken_inside = "|".join([a[s.i1 : s.i2] for s in inside])
    put_inside = "|".join([b[s.j1 : s.j2] for s in inside])
    # Cut only when both sides hold a name or time word at all (cutting costs far more than
    # looking): else neither class has words on both sides to differ.
    if inside and (lex.holds_tagged(taken_inside, _NAMED)
                   and lex.holds_tagged(put_inside, _NAMED)):
        # cut once for both classes
        taken_words, put_words = lex.segment(taken_inside), lex.segment(put_inside)
        for tags, kind in ((ENTITY_TAGS, "entity"), (TIME_TAGS, "date")):
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


def classify(a: str, b: str, common: Sequence[bool] | None = None,
             clauses: Clauses = ()) -> list[Span]:
    """Every span in which normalized text `b` differs from normalized text `a`, classified.
    `common`: which characters of `b` the stream repeats (`commonness`); without it, what is
    added at an edge is material. `clauses`: where b's clauses end (`Normalizer.with_clauses`);
    without them a moved clause of a word or two reads as words that trade places."""
    lex = lexicon()
    spans = _contained(a, b) or _differing(a, b, lex)
    order = reordered(a, b, spans, lex, clauses)
    if order:
        return [Span(op[0], op[1], op[2], op[3], op[4], order) for op in spans]
    moves = moved_spans(a, b, spans, lex, clauses)
    out = []
    for n, span in enumerate(spans):
        kind = moves.get(n) or (replaced_kind(a, b, span, lex) if span[0] == "replace"
                                 else added_kind(a, b, span, lex, common, clauses))
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
    "喇", "嚹", "囖", "吖", "喎", "㖞", "𡃉", "㗎", "嘅", "噃", "啫", "咋", "𠸏", "噉", "哎吔",
    "吔",
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


# Characters of a very short text for each slip it may carry: a slip in a two-character text is
# half of it; one in three characters leaves two thirds of the text to read it by.
_CHARS_A_SLIP = 3


def decoration_only(a: str, b: str, spans: list[Span], common: Sequence[bool] | None) -> bool:
    """Whether every span of a very short pair is particles, interjections and terms of address
    added or dropped (好的亲 / 好的呢亲, 返多少 / 返多少亲), what the stream repeats put at an edge
    (a repost comment: mark, 收藏了), a number's form, or slips (`_one_slip`), at most one for
    every `_CHARS_A_SLIP` characters of the shorter text: what a few characters may differ by and
    still say the same. A word broken or replaced is not (科大 / 咁大), nor a likeness that makes
    another word (快点 / 缺点)."""
    lex = lexicon()
    slips = 0
    for s in spans:
        if s.kind == "form":
            continue
        if s.kind == "typo" and _one_slip(a, b, s, lex):
            slips += 1
            continue
        if s.op == "replace":
            return False
        part = b[s.j1:s.j2] if s.op == "insert" else a[s.i1:s.i2]
        if s.op == "insert" and common is not None and _at_edge(a, b, s) and all(
                common[s.j1:s.j2]):
            continue
        if not all(word in _CHAT_DECORATION for word in lex.segment(part)):
            return False
    return slips <= min(len(a), len(b)) // _CHARS_A_SLIP


def _one_slip(a: str, b: str, s: Span, lex: Lexicon) -> bool:
    """Whether a slip is one a very short text may carry and still say the same: the same sound
    (an input method's), a similar shape or a variant form, where the later text reads no new
    word (麻烦 / 麻顿). A slip that makes another word says something else in a text this short
    (快点 / 缺点, 评价 / 平价): little else is left to read the text by."""
    x, y = a[s.i1:s.i2], b[s.j1:s.j2]
    return (lex.same_sound(x, y) or lex.similar_shape(x, y) or lex.variant(x, y)) and not any(
        len(w) > 1 and lex.is_common(w) for w in lex.words_at(b, s.j1, s.j2))


def added_passage(a: str, b: str, spans: list[Span], min_chars: int) -> Span | None:
    """The first span of `classify(a, b)` where the later text `b` puts a passage of its own
    inside the earlier text `a`: shared text on both sides (not an edge, where wrappers, lead-ins,
    comments and source lines go), more characters of b's own than a typo changes, and at least
    `min_chars` own characters taken out and put in together (a clause inserted, a phrase
    rewritten; not a span explained as the same words: a number written another way,
    一百六十八 for 168). None when there is no such span."""
    if all(s.j2 - s.j1 <= TYPO_MAX for s in spans):
        return None  # most pairs: no span puts in more than a typo changes
    ends = [0] + [s.i2 for s in spans]
    starts = [s.i1 for s in spans] + [len(a)]
    inside = [s for n, s in enumerate(spans)
              if s.j2 - s.j1 > TYPO_MAX
              and not (s.changes_meaning or s.kind in ("reorder", "swap") or s.kind in _EXPLAINED)
              and min(s.i1 - ends[n], starts[n + 1] - s.i2) >= INSIDE]
    if not inside:
        return None
    own_a, own_b = own_characters(a, b), own_characters(b, a)
    for s in inside:
        later = sum(own_b[s.j1 : s.j2])
        if later > TYPO_MAX and later + sum(own_a[s.i1 : s.i2]) >= min_chars:
            return s
    return None
