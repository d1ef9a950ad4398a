"""Verification of a candidate pair: the second measure, then the guards.

Simhash distance proposes; this module decides. The measure is character-bigram overlap of the
two normalized texts: Jaccard for copies with edits spread through them (typos, script), and
containment of the shorter in the longer for copies that gained or lost material at an edge (a
comment, a suffix, a cut). Hard negatives (a number changed, a negation added) are as similar as
true copies by any n-gram measure, so the guards look at *what* differs: the two texts are aligned
and every differing span inside the text (not an addition or cut at either edge) is checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

import numpy as np

from .config import VerifySettings

_DIGITS = re.compile(r"\d+")
_NUMERALS = frozenset("0123456789零〇一二三四五六七八九十百千万亿两")
_NEGATIONS = frozenset("不没無无非未别莫勿否")
_NEGATION_RE = re.compile("[" + "".join(sorted(_NEGATIONS)) + "]")


@dataclass(frozen=True, slots=True)
class Check:
    """The outcome of verifying one pair: duplicate or not, the similarity, the guard that spoke."""

    duplicate: bool
    similarity: float
    guard: str | None = None


def bigrams(text: str) -> frozenset[int]:
    """Character bigrams as integers (two 21-bit code points); a one-character text is its own
    feature. Integers hash and intersect faster than two-character strings."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype="<u4").astype(np.int64)
    if len(codes) < 2:
        return frozenset(codes.tolist())
    return frozenset(((codes[:-1] << 21) | codes[1:]).tolist())


def similarity(a: frozenset[int], b: frozenset[int], len_a: int, len_b: int,
               settings: VerifySettings) -> tuple[float, bool]:
    """(score, passes): the larger of Jaccard and length-bounded containment, and whether it
    reaches its threshold."""
    if not a or not b:
        return 0.0, False
    common = len(a & b)
    jaccard = common / (len(a) + len(b) - common)
    if jaccard >= settings.min_jaccard:
        return jaccard, True
    short, long_ = sorted((len_a, len_b))
    small, large = sorted((len(a), len(b)))
    if long_ <= short * settings.max_length_ratio and large <= small * settings.max_length_ratio:
        containment = common / min(len(a), len(b))
        if containment >= settings.min_containment:
            return containment, True
        return max(jaccard, containment), False
    return jaccard, False


def _signature(text: str) -> tuple[list[str], list[str]]:
    """The numbers and the negation characters of a text, as sorted lists (multisets)."""
    return sorted(_DIGITS.findall(text)), sorted(_NEGATION_RE.findall(text))


def _meaning_change(a: str, b: str, settings: VerifySettings) -> str | None:
    """The guard that refuses the pair, if any: 'numbers' or 'negation'.

    Input-method typos replace characters, and sometimes with a negation character ("坚持" /
    "不持"), so only a negation inserted or removed on its own counts as negating."""
    (nums_a, neg_a), (nums_b, neg_b) = _signature(a), _signature(b)
    check_numbers = settings.guard_numbers and (
        nums_a != nums_b or any(c in _NUMERALS for c in set(a) ^ set(b))
    )
    check_negation = settings.guard_negation and neg_a != neg_b
    if not (check_numbers or check_negation):
        return None
    for tag, i1, i2, j1, j2 in _opcodes(a, b):
        if tag == "equal":
            continue
        # Material added or cut at an edge changes no meaning inside the text, except a lone
        # negation word ("没有网" / "有网").
        edge = tag != "replace" and (i1 == 0 or j1 == 0 or i2 == len(a) or j2 == len(b))
        span_a, span_b = a[i1:i2], b[j1:j2]
        if edge and max(len(span_a), len(span_b)) > 1:
            continue
        if check_numbers and not edge and _changes_number(span_a, span_b):
            return "numbers"
        if check_negation and tag != "replace" and set(span_a + span_b) <= _NEGATIONS | {"有"}:
            return "negation"  # a negation inserted or dropped (a replaced character is a typo)
    return None


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


def _opcodes(a: str, b: str) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes for a -> b, with the common prefix and suffix aligned first so the
    quadratic matcher only sees the part that differs."""
    p = _common_prefix(a, b)
    q = _common_prefix(a[p:][::-1], b[p:][::-1])
    inner = SequenceMatcher(None, a[p : len(a) - q], b[p : len(b) - q], autojunk=False)
    ops = [(tag, i1 + p, i2 + p, j1 + p, j2 + p) for tag, i1, i2, j1, j2 in inner.get_opcodes()]
    return ops


def _changes_number(span_a: str, span_b: str) -> bool:
    """A digit added, dropped or replaced, or one numeral word replaced by another."""
    if any(c.isdigit() for c in span_a + span_b):
        return True
    return any(c in _NUMERALS for c in span_a) and any(c in _NUMERALS for c in span_b)


def verify(a: str, b: str, grams_a: frozenset[int], grams_b: frozenset[int],
           settings: VerifySettings) -> Check:
    """Decide whether normalized text `b` is a near duplicate of normalized text `a`."""
    if min(len(a), len(b)) < settings.min_chars:
        return Check(a == b, 1.0 if a == b else 0.0)
    score, passes = similarity(grams_a, grams_b, len(a), len(b), settings)
    if not passes:
        return Check(False, score)
    guard = _meaning_change(a, b, settings)
    return Check(guard is None, score, guard)
