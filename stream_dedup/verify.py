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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .config import VerifySettings
from .meaning import added_passage, classify


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


def bigrams(text: str) -> frozenset[int]:
    """Character bigrams as integers (two 21-bit code points); a one-character text is its own
    feature. Integers hash and intersect faster than two-character strings."""
    return bigram_sets([text])[0]


def bigram_sets(texts: Sequence[str]) -> list[frozenset[int]]:
    """`bigrams` of each text, from one numpy pass over the batch (numpy's per-call cost is
    more than the work on one short text)."""
    codes = np.frombuffer("".join(texts).encode("utf-32-le"), dtype="<u4").astype(np.int64)
    pairs = ((codes[:-1] << 21) | codes[1:]).tolist()
    out, start = [], 0
    for text in texts:
        end = start + len(text)
        out.append(frozenset(pairs[start : end - 1] if end - start > 1 else map(ord, text)))
        start = end
    return out


def similarity(a: frozenset[int], b: frozenset[int], len_a: int, len_b: int,
               settings: VerifySettings) -> tuple[float, str]:
    """(score, how it matches): "jaccard"; "containment" (the shorter text inside the longer,
    lengths within `max_length_ratio`); "contained" (inside a text more than that many times
    longer: a headline in its lead, a caption in its article); "" when it does not match."""
    if not a or not b:
        return 0.0, ""
    common = len(a & b)
    jaccard = common / (len(a) + len(b) - common)
    if jaccard >= settings.min_jaccard:
        return jaccard, "jaccard"
    containment = common / min(len(a), len(b))
    if containment < settings.min_containment:
        return max(jaccard, containment), ""
    short, long_ = sorted((len_a, len_b))
    small, large = sorted((len(a), len(b)))
    ratio = settings.max_length_ratio
    close = long_ <= short * ratio and large <= small * ratio
    return containment, "containment" if close else "contained"


def _few_substitutions(a: str, b: str) -> bool:
    """Same length, and at most one character in ten (at least two) differs in place: the
    shape of input-method typos, which bigram measures punish hardest on short texts. What the
    substituted characters mean is left to the meaning check."""
    if len(a) != len(b):
        return False
    differ = sum(x != y for x, y in zip(a, b, strict=True))
    return differ <= max(2, len(a) // 10)


def verify(a: str, b: str, grams_a: frozenset[int], grams_b: frozenset[int],
           settings: VerifySettings, measured: tuple[float, str] | None = None) -> Check:
    """Decide whether normalized text `b` is a near duplicate of normalized text `a`;
    `measured` is their `similarity` when the caller has it already."""
    if a == b:
        return Check(True, 1.0)
    if min(len(a), len(b)) < settings.min_chars:
        return Check(False, 0.0, "short")  # too little content: only an exact copy matches
    score, how = measured or similarity(grams_a, grams_b, len(a), len(b), settings)
    excerpt = settings.min_excerpt_chars <= len(b) < len(a)  # the later text taken from inside
    if how == "contained" and not excerpt:
        return Check(False, score, "contained" if settings.related_contained else None)
    if not how and _few_substitutions(a, b):
        how = "substitution"  # a short text with a typo or two loses too many bigrams
    if not how:
        return Check(False, score)
    spans = classify(a, b)
    changes = sorted({s.kind for s in spans} & settings.meaning_classes)
    if changes:
        return Check(False, score, ",".join(changes))
    if settings.related_passage and added_passage(a, b, spans, settings.min_passage_chars):
        return Check(False, score, apart="passage")
    return Check(True, score)
