"""`simhash`: classic Simhash over jieba words with term-frequency weights (seed 002).

Each distinct word votes with its count in the text. Word order plays no part: "太阳队总决赛赢了
雄鹿队" and "雄鹿队总决赛赢了太阳队" get the same fingerprint (the flaw seed 000 starts from).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .votes import word_simhash
from .words import Bag, words


@dataclass(frozen=True, slots=True)
class WordSimhash:
    """One Simhash per text over its words, weight = count."""

    name: str = "simhash"

    def __call__(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        bags = [Bag.of(words(t)) for t in texts]
        fps = word_simhash([b.words for b in bags], [b.counts for b in bags])
        return fps, np.arange(len(texts))
