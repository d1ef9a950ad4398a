"""`e-simhash`: the E-Simhash baseline of seed 000 (its ref [11]): entropy weights, hash XOR
position.

Each occurrence of a word at position p (word index in the text) is one feature: hash h(w) XOR p,
weight H(w)/M_d, so a word's occurrences weigh tf·H(w) together (frequency × entropy). H(w) is the
mean of the word's left and right neighbour entropies over the fitted corpus (`stats`). XOR with a
small integer changes only the low bits of a hash, and inserting a word at the head shifts every
later position: the flaw 000 points out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .stats import CorpusStats
from .votes import weighted_simhash
from .words import word_hashes, words


def positioned_hashes(ws: Sequence[str]) -> np.ndarray:
    """h(word) XOR position for every word of a text, in order."""
    return word_hashes(ws) ^ np.arange(len(ws), dtype=np.uint64)


@dataclass(frozen=True)
class ESimhash:
    """One E-Simhash per text."""

    stats: CorpusStats
    name: str = "e-simhash"

    def __call__(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        lists = [words(t) for t in texts]
        hashes = np.concatenate([positioned_hashes(ws) for ws in lists] or [np.zeros(0, np.uint64)])
        weights = np.concatenate(
            [self.stats.entropy(self.stats.ids(ws)) / max(len(ws), 1) for ws in lists]
            or [np.zeros(0)]
        )
        owners = np.repeat(np.arange(len(texts)), [len(ws) for ws in lists])
        return weighted_simhash(hashes, weights, owners, len(texts)), np.arange(len(texts))
