"""Scoring a detector's flags against a labelled stream, as the bench README defines it.

Conventions at the edges, so a score is always a number: precision is 1.0 when nothing was
flagged (no flag was wrong), recall is 1.0 when the stream has no true duplicate (none was
missed), and F1 is 0.0 when both are 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from stream_dedup.tools.eval.labelled import LabelledMessage, true_duplicates


@dataclass(frozen=True, slots=True)
class Scores:
    """How well flags matched the truth.

    `per_kind` maps each single edit name (``exact``, ``typo``, ...) to the recall over the true
    duplicates carrying that edit; a ``dup:retweet+typo`` copy counts for both. Hard negatives
    (``neg:*``) are never duplicates: `hard_negatives_flagged` is the share of them flagged, and
    `hard_negatives_per_kind` the same per ``neg:`` name (``numbers``, ``negation``).
    """

    precision: float
    recall: float
    f1: float
    per_kind: Mapping[str, float]
    hard_negatives_flagged: float
    hard_negatives_per_kind: Mapping[str, float]
    tp: int
    fp: int
    fn: int
    n: int


def score(flags: Sequence[bool], labelled: Sequence[LabelledMessage]) -> Scores:
    """Score one flag per message of `labelled`, in stream order."""
    if len(flags) != len(labelled):
        raise ValueError(f"{len(flags)} flags for {len(labelled)} messages")
    truth = true_duplicates(labelled)
    tp = sum(1 for flag, true in zip(flags, truth, strict=True) if flag and true)
    fp = sum(1 for flag, true in zip(flags, truth, strict=True) if flag and not true)
    fn = sum(1 for flag, true in zip(flags, truth, strict=True) if true and not flag)
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0

    edit_found: Counter[str] = Counter()
    edit_total: Counter[str] = Counter()
    neg_flagged: Counter[str] = Counter()
    neg_total: Counter[str] = Counter()
    for item, flag, true in zip(labelled, flags, truth, strict=True):
        if item.is_hard_negative:
            how = item.kind[4:]
            neg_total[how] += 1
            neg_flagged[how] += bool(flag)
        elif true:
            for edit in item.edits:
                edit_total[edit] += 1
                edit_found[edit] += bool(flag)

    negatives = sum(neg_total.values())
    return Scores(
        precision=precision,
        recall=recall,
        f1=f1,
        per_kind=_shares(edit_found, edit_total),
        hard_negatives_flagged=sum(neg_flagged.values()) / negatives if negatives else 0.0,
        hard_negatives_per_kind=_shares(neg_flagged, neg_total),
        tp=tp,
        fp=fp,
        fn=fn,
        n=len(labelled),
    )


def _shares(hits: Counter[str], totals: Counter[str]) -> dict[str, float]:
    return {name: hits[name] / totals[name] for name in sorted(totals)}
