"""`shingle`: Simhash over shingles of W consecutive words, every shingle weighing 1 (seed 001).

N words give N-W+1 shingles; a text of fewer than W words is one shingle of all of them. A
shingle's hash chains its words' hashes the way `fingerprint.ngram_hashes` chains characters
(the words' hashes stand in for code points), so one changed word changes W shingles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..fingerprint import Batch, ngram_hashes
from .votes import weighted_simhash
from .words import word_hashes, words


@dataclass(frozen=True, slots=True)
class ShingleSimhash:
    """One Simhash per text over its word shingles of `width` words."""

    width: int = 2
    name: str = "shingle"

    def __call__(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        lists = [words(t) for t in texts]
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum([len(ws) for ws in lists], out=offsets[1:])
        batch = Batch(word_hashes([w for ws in lists for w in ws]), offsets)
        hashes, owners = ngram_hashes(batch, self.width)
        fps = weighted_simhash(hashes, np.ones(len(hashes)), owners, len(texts))
        return fps, np.arange(len(texts))
