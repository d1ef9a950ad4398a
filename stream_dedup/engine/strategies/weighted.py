"""`weighted`: seed 003's weights, TF-IDF times (1 + POS + Len + Logo + Title).

    weight = TF·IDF·(1 + POS + Len + Logo + Title)

* TF = count of the word / feature words in the text; IDF = lg(N/n + 0.01) (003 leaves the log's
  base open; base 10 as in 000, a base only scales every weight alike).
* POS = 3 for a noun, 2 for a verb, 1 otherwise (jieba tags n*, v*).
* Len = (len − len_min)/(len_max − len_min) in characters over the text's feature words (0 when
  they are all one length).
* Logo = 5 when the word contains a marker word. 003's list is unpublished; MARKERS holds its
  three examples and common Chinese summary and turning-point phrases of the same kind.
* Title = 5 when the word is in the title: the text's first paragraph, with `fingerprint.title`
  on (the title line of a record, `input.title_field`, or of a labelled stream).

Stop words are dropped by POS (`words.STOP_TAGS`); the title's words are features too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .stats import CorpusStats
from .votes import word_simhash
from .words import STOP_TAGS, Bag, is_noun, is_verb, paragraphs, tagged

# Seed 003's three examples (综上所述, 总之, 但是) and phrases of the same two kinds: summing up
# and turning. Written for this project; no published list exists.
MARKERS = ("综上所述", "总之", "但是", "总而言之", "总的来说", "由此可见", "可见", "因此",
           "所以", "然而", "不过", "事实上", "值得注意", "最后", "首先", "其次", "总结", "结论")
MARKER_WEIGHT = 5.0
TITLE_WEIGHT = 5.0


def pos_weight(tag: str) -> float:
    return 3.0 if is_noun(tag) else 2.0 if is_verb(tag) else 1.0


def length_weight(lengths: np.ndarray) -> np.ndarray:
    """(len − len_min)/(len_max − len_min) over one text's words; 0 when all are one length."""
    span = lengths.max() - lengths.min() if len(lengths) else 0
    return (lengths - lengths.min()) / span if span else np.zeros(len(lengths))


def weights_003(bag: Bag, tags: Sequence[str], title: frozenset[str],
                stats: CorpusStats) -> np.ndarray:
    """003's weight of each distinct word of `bag` (tags: each word's POS tag, same order)."""
    tf = bag.counts / bag.total
    idf = stats.idf(stats.ids(bag.words))
    pos = np.array([pos_weight(t) for t in tags])
    lengths = length_weight(np.array([len(w) for w in bag.words]))
    logo = np.array([MARKER_WEIGHT if any(m in w for m in MARKERS) else 0.0 for w in bag.words])
    in_title = np.array([TITLE_WEIGHT if w in title else 0.0 for w in bag.words])
    return tf * idf * (1 + pos + lengths + logo + in_title)


@dataclass(frozen=True)
class WeightedSimhash:
    """One Simhash per text with 003's weights."""

    stats: CorpusStats
    title: bool = False
    name: str = "weighted"

    def __call__(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        bags, weights = [], []
        for text in texts:
            pairs = [(w, t) for w, t in tagged(text) if t not in STOP_TAGS]
            tag_of = dict(reversed(pairs))  # a word's first tag
            bag = Bag.of([w for w, _ in pairs])
            bags.append(bag)
            weights.append(weights_003(bag, [tag_of[w] for w in bag.words],
                                       self._title_words(text), self.stats))
        return word_simhash([b.words for b in bags], weights), np.arange(len(texts))

    def _title_words(self, text: str) -> frozenset[str]:
        parts = paragraphs(text)
        if not self.title or len(parts) < 2:
            return frozenset()
        return frozenset(w for w, _ in tagged(parts[0]))
