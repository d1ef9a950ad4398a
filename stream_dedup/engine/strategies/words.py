"""Words of a normalized text, as the research strategies read them (seeds 000-004).

All of them segment with jieba (000 uses it; 003/004 used ICTCLAS, which is not on PyPI), with the
HMM off: ~6k short texts a second against ~5k with it, and a word the dictionary does not know
splits into characters the same way in every text, which is what a fingerprint needs. POS tags
come from jieba's dictionary (`jieba.posseg`), noisy on short spans but the only offline tagger.

Normalized texts are letters and digits only, plus PARAGRAPH_BREAK between paragraphs when
`normalize.paragraphs` is on; no word ever contains a break.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache

import numpy as np
import xxhash

from ..normalize import PARAGRAPH_BREAK

# jieba tags of words that carry no topic: particles (的 了 着 过 地 得), modal particles,
# interjections, onomatopoeia, non-morphemes and punctuation. The sources drop "stop words" but
# publish no list; the fitted IDF weighs down the other frequent words.
STOP_TAGS = frozenset({"u", "uj", "ul", "uz", "ug", "uv", "ud", "y", "e", "o", "x", "w"})


@cache
def _jieba():  # type: ignore[no-untyped-def]
    """jieba with its dictionary loaded once and its start-up chatter silenced."""
    import jieba
    import jieba.posseg

    jieba.setLogLevel(60)
    jieba.initialize()
    return jieba


def words(text: str) -> list[str]:
    """The words of a normalized text in order (paragraph breaks dropped)."""
    return [w for w in _jieba().lcut(text, HMM=False) if not w.isspace()]


def tagged(text: str) -> list[tuple[str, str]]:
    """(word, POS tag) pairs of a normalized text in order (paragraph breaks dropped)."""
    posseg = _jieba().posseg
    return [(p.word, p.flag) for p in posseg.lcut(text, HMM=False) if not p.word.isspace()]


def paragraphs(text: str) -> list[str]:
    """The non-empty paragraphs of a normalized text; one when it has no breaks."""
    return [p for p in text.split(PARAGRAPH_BREAK) if p]


def is_noun(tag: str) -> bool:
    return tag.startswith("n")


def is_verb(tag: str) -> bool:
    return tag.startswith("v")


@lru_cache(maxsize=1 << 18)
def _hash(word: str) -> int:
    return xxhash.xxh3_64_intdigest(word.encode("utf-8"))


def word_hashes(ws: Sequence[str]) -> np.ndarray:
    """Stable 64-bit hashes (xxh3) of words, uint64: the same word hashes the same in every
    process, which stored fingerprints need."""
    return np.fromiter((_hash(w) for w in ws), dtype=np.uint64, count=len(ws))


@dataclass(frozen=True, slots=True)
class Bag:
    """A text's distinct words in order of first appearance, with their counts."""

    words: tuple[str, ...]
    counts: np.ndarray  # int64, one per word

    @classmethod
    def of(cls, ws: Sequence[str]) -> Bag:
        counted = Counter(ws)  # insertion order: first appearance
        return cls(tuple(counted), np.fromiter(counted.values(), np.int64, count=len(counted)))

    @property
    def total(self) -> int:
        """M_d: the feature words of the text, repeats counted."""
        return int(self.counts.sum())
