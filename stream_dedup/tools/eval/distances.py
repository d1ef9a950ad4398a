"""The fingerprint alone: precision and recall of "a duplicate when within t bits" for every t.

The engine's rows score a strategy inside the whole pipeline, where the winnowing anchors find
most candidates and verification decides, so strategies differ little there. The papers judge a
fingerprint by its distance alone; this view does the same, on the same stream:

1. every message's fingerprints, as the engine computes them (same normalization, same strategy);
2. for every message, its distance to the nearest earlier message, by an exact scan (all earlier
   fingerprints, XOR and popcount in numpy; no block tables, so no pair is missed at any t);
3. message i is flagged at threshold t when that distance is <= t; precision and recall over the
   stream as `score.score` counts them, for t = 0..64.

With several fingerprints per text (drpkp), the distance between a text A and an earlier text B
is the smallest t at which enough of A's paragraphs have a paragraph of B within t bits: at least
`share` times the paragraph count of the shorter of the two (004's rule; the share is
`fingerprint.drpkp_share`). With one fingerprint per text this is the Hamming distance.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ...engine.fingerprint import Strategy
from .labelled import LabelledMessage, true_duplicates

NO_EARLIER = 65  # the first message has no earlier one: never flagged at any t <= 64
THRESHOLDS = np.arange(65)


def fingerprints(strategy: Strategy, texts: Sequence[str],
                 batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """All texts' fingerprints and owner indices, computed a batch at a time like the engine."""
    fps, owners = [], []
    for start in range(0, len(texts), batch_size):
        batch_fps, batch_owner = strategy(texts[start : start + batch_size])
        fps.append(batch_fps)
        owners.append(batch_owner + start)
    return np.concatenate(fps), np.concatenate(owners)


def nearest_distances(fps: np.ndarray, owner: np.ndarray, count: int, share: float,
                      progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """Each text's distance to its nearest earlier text (NO_EARLIER for the first)."""
    starts = np.searchsorted(owner, np.arange(count + 1))
    sizes = np.diff(starts)
    single = bool(np.all(sizes == 1))
    out = np.full(count, NO_EARLIER, dtype=np.int64)
    for i in range(1, count):
        mine = fps[starts[i] : starts[i + 1]]
        bits = np.bitwise_count(mine[:, None] ^ fps[None, : starts[i]])
        if single:
            out[i] = bits.min()
        else:
            out[i] = _set_distance(bits, starts[:i], sizes[:i], share)
        if progress is not None and (i % 5000 == 0 or i == count - 1):
            progress(i + 1, count)
    return out


def _set_distance(bits: np.ndarray, starts: np.ndarray, sizes: np.ndarray,
                  share: float) -> int:
    """Smallest t at which some earlier text has enough of this text's rows within t bits."""
    per_text = np.sort(np.minimum.reduceat(bits, starts, axis=1), axis=0)  # rows x texts
    need = np.ceil(share * np.minimum(len(bits), sizes)).astype(np.int64)
    return int(per_text[need - 1, np.arange(len(sizes))].min())


@dataclass(frozen=True, slots=True)
class Curve:
    """One strategy's scores at every threshold t (index = t)."""

    method: str
    precision: np.ndarray
    recall: np.ndarray
    f1: np.ndarray
    hard_negatives_flagged: np.ndarray

    def best(self) -> int:
        """The threshold of the highest F1 (the smallest such t)."""
        return int(np.argmax(self.f1))


def curve(method: str, distances: np.ndarray, labelled: Sequence[LabelledMessage]) -> Curve:
    """Scores of flagging each message whose nearest earlier text is within t, for every t."""
    truth = np.array(true_duplicates(labelled), bool)
    hard = np.array([m.is_hard_negative for m in labelled], bool)
    flagged = distances[:, None] <= THRESHOLDS[None, :]
    tp = (flagged & truth[:, None]).sum(axis=0)
    fp = (flagged & ~truth[:, None]).sum(axis=0)
    fn = truth.sum() - tp
    precision = np.where(tp + fp > 0, tp / np.maximum(tp + fp, 1), 1.0)
    recall = np.where(tp + fn > 0, tp / np.maximum(tp + fn, 1), 1.0)
    total = precision + recall
    f1 = np.where(total > 0, 2 * precision * recall / np.where(total > 0, total, 1), 0.0)
    negatives = flagged[hard].mean(axis=0) if hard.any() else np.zeros(len(THRESHOLDS))
    return Curve(method, precision, recall, f1, negatives)

