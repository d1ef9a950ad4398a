"""`tfidf`: Simhash of jieba words weighted by TFC-normalised TF-IDF (seed 000, formula 3).

    w_dt = (m_dt/M_d)·lg(N/n_t + 0.01) / sqrt(Σ_{t∈d} [(m_dt/M_d)·lg(N/n_t + 0.01)]²)

m_dt: count of t in d; M_d: words in d; N, n_t: documents in the fitted corpus, and those
containing t. The normalisation divides every weight of a text by one number, so it never changes
that text's fingerprint; it matters where weights are compared across words (P-Simhash's damping).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .stats import CorpusStats
from .votes import word_simhash
from .words import Bag, words


def tfc(counts: np.ndarray, idf: np.ndarray) -> np.ndarray:
    """TFC weights of one text's distinct words from their counts and IDFs (all 0 when every
    IDF is 0)."""
    raw = counts / counts.sum() * idf
    norm = float(np.sqrt(np.sum(raw * raw)))
    return raw / norm if norm > 0 else raw


def bag_weights(bag: Bag, stats: CorpusStats) -> np.ndarray:
    """TFC weights of a text's distinct words, in the bag's order."""
    return tfc(bag.counts, stats.idf(stats.ids(bag.words)))


@dataclass(frozen=True)
class TfidfSimhash:
    """One Simhash per text over its distinct words with TFC weights."""

    stats: CorpusStats
    name: str = "tfidf"

    def __call__(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        bags = [Bag.of(words(t)) for t in texts]
        fps = word_simhash([b.words for b in bags], [bag_weights(b, self.stats) for b in bags])
        return fps, np.arange(len(texts))
