"""`p-simhash`: seed 000's P-Simhash, word weights damped by co-occurrence, word positions mixed in.

Per text: jieba words → TFC weights (`tfidf.tfc`) → the top m words by weight → for each, its
64-bit hash signature Sig and its position signature Sig' (PBDR) → SigFnl = μ·Sig + (1−μ)·Sig'
(bits as ±1) → times its J-Tidf weight → summed → sign.

* J-Tidf (000 formula 6): w'_y = w_y − w_x·J(x, y) when positive, else 0, for x, y both in the
  text. 000 lowers "one of the pair" and does not say which, nor how several partners combine:
  here the lighter word of each pair is lowered, by its heaviest partner term max_x w_x·J(x, y)
  over the words ranked above it, always from the original TFC weights. The heaviest word is
  never lowered. Ties keep first-appearance order.
* PBDR: u marks the positions p (word index in the text) where the word occurs; one fixed random
  map g sends every position to one of 64 slots, the same for all words and texts; v_j sums the
  u_p with g(p) = j; v minus its mean, then Sig'_j = 1 where v_j > 0. Positions are absolute, so
  one word added at the head moves every Sig' (000's own criticism of E-Simhash applies here too).
* With μ > 0.5 each SigFnl bit keeps Sig's sign; Sig' only scales it: ±1 where the two agree,
  ±(2μ − 1) where they differ. Word order thus changes the sums, and through them the bits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..fingerprint import mix64
from .stats import CorpusStats
from .tfidf import bag_weights
from .votes import pack, signs
from .words import Bag, word_hashes, words

_POSITION_SALT = np.uint64(0x5042445250534948)  # fixes g: the same map in every process


def position_slots(positions: np.ndarray) -> np.ndarray:
    """g: word position -> slot 0..63, fixed and pseudo-random."""
    return (mix64(positions.astype(np.uint64) ^ _POSITION_SALT) % np.uint64(64)).astype(np.int64)


def pbdr(rows: int, occurrence_row: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Sig' of `rows` words as ±1 rows; occurrence k, of word occurrence_row[k], is at
    positions[k]."""
    v = np.zeros((rows, 64))
    np.add.at(v, (occurrence_row, position_slots(positions)), 1.0)
    v -= v.mean(axis=1, keepdims=True)
    return np.where(v > 0, 1.0, -1.0)


def sig_fnl(sig: np.ndarray, sig_prime: np.ndarray, mu: float) -> np.ndarray:
    """μ·Sig + (1−μ)·Sig', both as ±1."""
    return mu * sig + (1.0 - mu) * sig_prime


def j_tidf(weights: np.ndarray, jaccard: np.ndarray) -> np.ndarray:
    """Damped weights of words ranked heaviest first: w'_y = max(w_y − max_{x<y} w_x·J(x,y), 0)
    with x before y in rank order; jaccard is the (m, m) matrix J(x, y)."""
    if len(weights) < 2:
        return weights.copy()
    damp = np.triu(weights[:, None] * jaccard, k=1).max(axis=0)
    return np.maximum(weights - damp, 0.0)


@dataclass(frozen=True)
class PSimhash:
    """One P-Simhash per text (000): top m words, J-Tidf weights, SigFnl with μ."""

    stats: CorpusStats
    top_m: int = 20
    mu: float = 1.5
    name: str = "p-simhash"

    def __call__(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        chosen: list[str] = []
        weights: list[np.ndarray] = []
        owners: list[int] = []
        occurrence_row: list[int] = []
        positions: list[int] = []
        for i, text in enumerate(texts):
            ws = words(text)
            top, damped = self._top_words(Bag.of(ws))
            row_of = {w: len(chosen) + k for k, w in enumerate(top)}
            for p, w in enumerate(ws):
                if w in row_of:
                    occurrence_row.append(row_of[w])
                    positions.append(p)
            chosen.extend(top)
            weights.append(damped)
            owners.extend([i] * len(top))
        sig = signs(word_hashes(chosen))
        sig_prime = pbdr(len(chosen), np.array(occurrence_row, np.int64),
                         np.array(positions, np.int64))
        w = np.concatenate(weights or [np.zeros(0)])
        rows = w[:, None] * sig_fnl(sig, sig_prime, self.mu)
        return pack(rows, np.array(owners, np.int64), len(texts)), np.arange(len(texts))

    def _top_words(self, bag: Bag) -> tuple[list[str], np.ndarray]:
        """The top m words by TFC weight, heaviest first, and their J-Tidf weights."""
        tfc = bag_weights(bag, self.stats)
        order = np.argsort(-tfc, kind="stable")[: self.top_m]
        top = [bag.words[k] for k in order]
        ids = self.stats.ids(top)
        a, b = np.triu_indices(len(top), k=1)
        jaccard = np.zeros((len(top), len(top)))
        jaccard[a, b] = jaccard[b, a] = self.stats.jaccard(ids[a], ids[b])
        return top, j_tidf(tfc[order], jaccard)
