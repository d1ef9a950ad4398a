"""Verification of a candidate pair: the second measure, then the guards.

Simhash distance proposes; this module decides. The measure is character-bigram overlap of the
two normalized texts: Jaccard for copies with edits spread through them (typos, script), and
containment of the shorter in the longer for copies that gained or lost material at an edge (a
comment, a suffix, a cut). Hard negatives (a number changed, a negation added) are as similar as
true copies by any n-gram measure, so a pair that passes is aligned and every differing span is
classified (`meaning.classify`): a pair with a meaning change of an enabled class is *related*,
not a duplicate. A later text that puts a passage of its own inside the earlier one (a clause
inserted, a phrase rewritten: `meaning.added_passage`) carries content the earlier lacks, so it is
not a copy of *that* text; it may still be one of a fuller earlier text (the earlier one a copy
with a clause cut), so this rule keeps the pair apart without settling the message.

The measure of a batch's pairs is taken in one call of compiled kernels (numba) over each text's
distinct bigrams (`similarities`); `similarity` is that call on one pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..config import VerifySettings
from . import numerals
from .jit import compiled
from .meaning import added_passage, classify, decoration_only, unexplained
from .mood import asked_anew
from .normalize import Clauses


@dataclass(slots=True)  # not frozen: a frozen init costs 4x, made per pair
class Check:
    """The outcome of verifying one pair: duplicate or not, the similarity, the guard that spoke."""

    duplicate: bool
    similarity: float
    # Why a similar pair is not a duplicate: "short" (too little content), or what makes it only
    # related: "contained", or the meaning changes, comma-separated.
    guard: str | None = None
    # A rule that keeps this pair apart without settling the message (guard None, so the next
    # candidate is tried): "passage", the later text adds a passage of its own inside this one.
    apart: str | None = None


# How a pair matches (`similarity`), by the code the kernel returns.
_HOW = ("", "jaccard", "containment", "contained")
_NONE, _JACCARD, _CONTAINMENT, _CONTAINED = range(len(_HOW))


_SLIPS = 2  # characters a longer aligned pair may differ by without evidence

Measured = tuple[float, str, float]  # (score, how it matches: see `_score`, bigram Jaccard)


def similarity(a: str, b: str, settings: VerifySettings) -> Measured:
    """`similarities` of one pair of normalized texts."""
    return similarities([a, b], [0], [1], settings)[0]


def similarities(texts: Sequence[str], first: Sequence[int], second: Sequence[int],
                 settings: VerifySettings) -> list[Measured]:
    """(score, how it matches, Jaccard) of texts[first[k]] and texts[second[k]] for every k, in
    one compiled pass (sets of bigrams built and intersected pair by pair in Python cost more
    than the rest of the verify stage). The score decides whether a pair matches; the Jaccard
    ranks the candidates of a message on one scale (`verdict.closest_verdict`)."""
    lengths = np.fromiter(map(len, texts), np.int64, count=len(texts))
    starts = np.zeros(len(texts) + 1, np.int64)
    np.cumsum(lengths, out=starts[1:])
    codes = np.frombuffer("".join(texts).encode("utf-32-le"), dtype="<u4")
    # Always these types: others would compile another specialization of the kernel.
    scores, kinds, jaccards = _similarities(codes, starts, np.array(first, np.int64),
                                            np.array(second, np.int64),
                                            float(settings.min_jaccard),
                                            float(settings.min_containment),
                                            float(settings.max_length_ratio))
    return list(zip(scores.tolist(), [_HOW[k] for k in kinds.tolist()], jaccards.tolist(),
                    strict=True))


def warm_up() -> None:
    """Compile the kernels now rather than inside the first batch: ~3 s, or ~0.35 s loaded from
    numba's cache."""
    similarities(["ab", "abc"], [0], [1], VerifySettings())


@compiled
def _similarities(codes: np.ndarray, starts: np.ndarray, first: np.ndarray, second: np.ndarray,
                  min_jaccard: float, min_containment: float,
                  max_length_ratio: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores, `_HOW` codes and Jaccards of the pairs (first[k], second[k]) of the texts whose
    code points are codes[starts[t]:starts[t + 1]]. The bigrams a pair shares are counted in a
    set of the second text's, kept while the next pairs have the same second text (the engine's
    pairs come message by message)."""
    longest = np.max(starts[1:] - starts[:-1]) if len(starts) > 1 else 0
    keys, marks = _new_set(longest)
    grams, offsets, mark = _bigrams(codes, starts, keys, marks)
    scores = np.empty(len(first), np.float64)
    kinds = np.empty(len(first), np.int8)
    jaccards = np.zeros(len(first), np.float64)
    held = -1
    for k in range(len(first)):
        a, b = first[k], second[k]
        if b != held:
            held, mark = b, mark + 1
            for i in range(offsets[b], offsets[b + 1]):
                _add(keys, marks, mark, grams[i])
        common = 0
        for i in range(offsets[a], offsets[a + 1]):
            common += marks[_slot(keys, marks, mark, grams[i])] == mark
        size_a, size_b = offsets[a + 1] - offsets[a], offsets[b + 1] - offsets[b]
        scores[k], kinds[k] = _score(common, size_a, size_b, starts[a + 1] - starts[a],
                                     starts[b + 1] - starts[b], min_jaccard, min_containment,
                                     max_length_ratio)
        if size_a and size_b:
            jaccards[k] = common / (size_a + size_b - common)
    return scores, kinds, jaccards


@compiled
def _bigrams(codes: np.ndarray, starts: np.ndarray, keys: np.ndarray,
             marks: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Each text's distinct character bigrams as integers (two 21-bit code points), in order of
    first appearance, all in one array: text t's are grams[offsets[t]:offsets[t + 1]]. A
    one-character text is its own feature. Made distinct in the set (`keys`, `marks`), a mark a
    text (sorting them cost four times as much); returns the last mark used too."""
    grams = np.empty(len(codes), np.int64)
    offsets = np.zeros(len(starts), np.int64)
    end = mark = 0
    for t in range(len(starts) - 1):
        begin, last = starts[t], starts[t + 1] - 1
        if last == begin:
            grams[end] = codes[begin]
            end += 1
        mark += 1
        for i in range(begin, last):
            gram = (np.int64(codes[i]) << 21) | codes[i + 1]
            if _add(keys, marks, mark, gram):
                grams[end] = gram
                end += 1
        offsets[t + 1] = end
    return grams, offsets, mark


# An open-addressing set of int64 values: value v is in it when marks[slot] == mark at its slot,
# so a new mark empties it without touching the arrays. At most half full: 2x the values.
_FIBONACCI = np.uint64(0x9E3779B97F4A7C15)


@compiled
def _new_set(values: int) -> tuple[np.ndarray, np.ndarray]:
    size = 16
    while size < 2 * values:
        size <<= 1
    return np.empty(size, np.int64), np.zeros(size, np.int64)


@compiled
def _slot(keys: np.ndarray, marks: np.ndarray, mark: int, value: int) -> int:
    """Where `value` is in the set, or the free slot it would take (Fibonacci hashing; the
    product's high half is well mixed, the low bits of a bigram are not)."""
    mask = len(keys) - 1
    slot = np.int64((np.uint64(value) * _FIBONACCI) >> np.uint64(32)) & mask
    while marks[slot] == mark and keys[slot] != value:
        slot = (slot + 1) & mask
    return slot


@compiled
def _add(keys: np.ndarray, marks: np.ndarray, mark: int, value: int) -> bool:
    """Put `value` in the set; False when it was there already."""
    slot = _slot(keys, marks, mark, value)
    if marks[slot] == mark:
        return False
    marks[slot], keys[slot] = mark, value
    return True


@compiled
def _score(common: int, size_a: int, size_b: int, len_a: int, len_b: int, min_jaccard: float,
           min_containment: float, max_length_ratio: float) -> tuple[float, int]:
    """(score, `_HOW` code) of two texts of `size_*` distinct bigrams (`len_*` characters)
    sharing `common`: "jaccard"; "containment" (the shorter text inside the longer, lengths
    within `max_length_ratio`); "contained" (inside a text more than that many times longer: a
    headline in its lead, a caption in its article); none when it does not match. An empty text
    matches nothing."""
    if size_a == 0 or size_b == 0:
        return 0.0, _NONE
    jaccard = common / (size_a + size_b - common)
    if jaccard >= min_jaccard:
        return jaccard, _JACCARD
    containment = common / min(size_a, size_b)
    if containment < min_containment:
        return max(jaccard, containment), _NONE
    short, long_ = min(len_a, len_b), max(len_a, len_b)
    small, large = min(size_a, size_b), max(size_a, size_b)
    close = long_ <= short * max_length_ratio and large <= small * max_length_ratio
    return containment, _CONTAINMENT if close else _CONTAINED


def _few_substitutions(a: str, b: str) -> bool:
    """Same length, and at most one character in ten (at least two) differs in place: the
    shape of input-method typos, which bigram measures punish hardest on short texts. What the
    substituted characters mean is left to the meaning check."""
    if len(a) != len(b):
        return False
    differ = sum(x != y for x, y in zip(a, b, strict=True))
    return differ <= max(2, len(a) // 10)


def _short_pair(a: str, b: str, settings: VerifySettings) -> bool:
    """Both texts short (`short_chars`), of close length (`max_length_ratio`) and sharing at
    least half the distinct characters of the shorter: one changed character costs a short text
    two of its few bigrams, so bigram measures fail its copies (a pair sharing fewer characters
    is not aligned: that would cost an alignment for nothing)."""
    shorter, longer = (a, b) if len(a) <= len(b) else (b, a)
    if len(longer) > settings.short_chars or len(longer) > len(shorter) * settings.max_length_ratio:
        return False
    mine = set(shorter)
    return 2 * len(mine.intersection(longer)) >= len(mine)


def _nearly(a: str, b: str, score: float, settings: VerifySettings) -> bool:
    """Texts of close length whose bigram score falls short by a little (`min_align_score`): a
    few slips, or a number spelled another way (245 / 两百四十五), cost a text more bigrams
    than characters."""
    return score >= settings.min_align_score and max(len(a), len(b)) <= min(
        len(a), len(b)) * settings.max_length_ratio
# Bigram score from which a pair that fails the measures is measured again in digits: a number's
# words take a few of a text's bigrams, not half of them (and most candidates that fail share
# less: the regex then never runs).
_SHARED_FOR_DIGITS = 0.5


def _similar_in_digits(a: str, b: str, settings: VerifySettings) -> bool:
    """Whether the pair is similar enough once every number written in numeral words is
    written in digits: a number's form is not a difference (the meaning check reads its value),
    yet 两百四十五 for 245 replaces two bigrams with six."""
    x, y = numerals.in_digits(a), numerals.in_digits(b)
    return (x != a or y != b) and similarity(x, y, settings)[1] in ("jaccard", "containment")


def unmatched(a: str, b: str, measured: Measured, settings: VerifySettings) -> bool:
    """Whether `verify` answers no more than "not a duplicate" (no guard, nothing set apart),
    read from the lengths and the `measured` similarity alone: the bigram measures fail, neither
    text is very short, and no rule that matches such a pair applies (the lengths differ: not
    `_few_substitutions`; a text too long or the lengths too far apart: not `_short_pair`; the
    score under both `_nearly`'s and `_similar_in_digits`'). Most candidates of a message: the
    caller passes over them without a `verify`."""
    score, how, _ = measured
    short, long_ = (len(a), len(b)) if len(a) <= len(b) else (len(b), len(a))
    return (not how and short != long_ and short >= settings.min_chars
            and (long_ > settings.short_chars or long_ > short * settings.max_length_ratio)
            and score < settings.min_align_score and score < _SHARED_FOR_DIGITS)


def _very_short(a: str, b: str, score: float, settings: VerifySettings,
                common: Sequence[bool] | None, clauses: Clauses, asks: bool) -> Check:
    """A pair with a text under `min_chars`: a near copy only when what differs is a slip with
    evidence, a number's form, a synonym, or particles, interjections and terms of address (a
    content word or a number changed makes it related); too little content for anything else."""
    if not _short_pair(a, b, settings):
        return Check(False, score, "short")
    spans = classify(a, b, common, clauses)
    changes = sorted({s.kind for s in spans} & settings.meaning_classes)
    if changes:
        return Check(False, score, ",".join(changes))
    if decoration_only(a, b, spans, common):
        return _same_act(a, b, score, settings, asks)
    return Check(False, score, "short")


def _same_act(a: str, b: str, score: float, settings: VerifySettings, asks: bool) -> Check:
    """A pair that matches is a duplicate unless the later text, which `asks`, is a question
    the earlier is not (`mood.asked_anew`): related."""
    if asks and settings.related_question and asked_anew(a, b):
        return Check(False, score, "question")
    return Check(True, score)


def verify(a: str, b: str, settings: VerifySettings, measured: Measured | None = None,
           common: Sequence[bool] | None = None, clauses: Clauses = (),
           asks: bool = False) -> Check:
    """Decide whether normalized text `b` is a near duplicate of normalized text `a`;
    `measured` is their `similarity` when the caller has it already, `common` which characters
    of `b` the stream repeats (`commonness.Commonness`), `clauses` where b's clauses end
    (`normalize.Normalizer.with_clauses`), `asks` whether b's message ends with a question mark
    (`mood.asks`)."""
    if a == b:
        return Check(True, 1.0)
    score, how, _ = measured or similarity(a, b, settings)
    if min(len(a), len(b)) < settings.min_chars:
        return _very_short(a, b, score, settings, common, clauses, asks)
    excerpt = settings.min_excerpt_chars <= len(b) < len(a)  # the later text taken from inside
    if how == "contained" and not excerpt:
        return Check(False, score, "contained" if settings.related_contained else None)
    spans = None
    if not how and _few_substitutions(a, b):
        how = "substitution"  # a short text with a typo or two loses too many bigrams
    elif not how and ((short := _short_pair(a, b, settings)) or _nearly(a, b, score, settings)):
        spans = classify(a, b, common, clauses)
        left = unexplained(a, b, spans)
        # A short copy: what differs is explained, bigrams are too few. A longer one: only a
        # slip or two left unexplained (a phrase rewritten inside is another text's business).
        if 1 - left / min(len(a), len(b)) >= settings.min_aligned and (short or left <= _SLIPS):
            how = "aligned"
    if not how and score >= _SHARED_FOR_DIGITS and _similar_in_digits(a, b, settings):
        how = "numbers"  # numbers written in words cost many bigrams (两百四十五 / 245)
    if not how:
        return Check(False, score)
    spans = spans if spans is not None else classify(a, b, common, clauses)
    changes = sorted({s.kind for s in spans} & settings.meaning_classes)
    if changes:
        return Check(False, score, ",".join(changes))
    if settings.related_passage and added_passage(a, b, spans, settings.min_passage_chars):
        return Check(False, score, apart="passage")
    return _same_act(a, b, score, settings, asks)
