"""`drpkp`: seed 004's paragraph fingerprints, a set of them per text.

Per paragraph s (paragraphs are the text's lines, kept by `normalize.paragraphs`):
1. keep nouns and verbs (jieba tags n*, v*); p(w) = n(w, s)/n(s), the share of s's nouns and
   verbs that are w; the 10 words of highest p are s's topic words (ties: first appearance).
2. weight = frequency + context + position. 004's formula is lost; what it says is kept:
   frequency = p(w); context = 0.1·n added to each of the n topic words that start in one
   20-character window, when n >= 2 ("several topic words", windows stepping by 20, summed over
   windows); position = TITLE_BONUS when the word is also in the title (`fingerprint.title`).
   004 also names the first, the last and "the x-th" paragraph without values; they get none
   here, because a bonus by paragraph place would change a paragraph's fingerprint when a
   re-publication moves it, the edit paragraph fingerprints exist to survive.
3. the paragraph's fingerprint: Simhash of its topic words, each hashed with a Rabin fingerprint.
A text's fingerprints are those of its paragraphs, each once (the title line gets none: it is
too short to fingerprint and the first thing a re-publisher changes). The block tables look up
every paragraph; 004's rule, a share of matching paragraphs makes a duplicate
(`fingerprint.drpkp_share`), is applied by the evaluation's fingerprint view
(`eval.distances`); in the engine the verification decides, as for every strategy. A text with
no noun or verb at all gets the one fingerprint 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .rabin import rabin_hashes
from .votes import weighted_simhash
from .words import is_noun, is_verb, paragraphs, tagged

TOPIC_WORDS = 10
WINDOW_CHARS = 20
CONTEXT_STEP = 0.1
TITLE_BONUS = 0.5


@dataclass(frozen=True, slots=True)
class Topics:
    """A paragraph's topic words, heaviest p first, with p(w) and their character offsets."""

    words: tuple[str, ...]
    share: np.ndarray  # p(w)
    starts: dict[str, list[int]]  # character offsets of each topic word in the paragraph


def topics(tokens: Sequence[tuple[str, str]], limit: int = TOPIC_WORDS) -> Topics:
    """Topic words of one paragraph's tagged tokens (step 1)."""
    content: list[str] = []
    starts: dict[str, list[int]] = {}
    offset = 0
    for word, tag in tokens:
        if is_noun(tag) or is_verb(tag):
            content.append(word)
            starts.setdefault(word, []).append(offset)
        offset += len(word)
    counted = Counter(content).most_common()  # stable: ties keep first appearance
    chosen = counted[:limit]
    share = np.array([n for _, n in chosen], np.float64) / max(len(content), 1)
    return Topics(tuple(w for w, _ in chosen), share, {w: starts[w] for w, _ in chosen})


def context_weights(found: Topics, window: int = WINDOW_CHARS) -> np.ndarray:
    """0.1·n for each of the n >= 2 topic words starting inside one window, summed over windows."""
    in_window: dict[int, set[int]] = {}
    for k, word in enumerate(found.words):
        for start in found.starts[word]:
            in_window.setdefault(start // window, set()).add(k)
    weights = np.zeros(len(found.words))
    for members in in_window.values():
        if len(members) >= 2:
            weights[list(members)] += CONTEXT_STEP * len(members)
    return weights


def topic_weights(found: Topics, title: frozenset[str]) -> np.ndarray:
    """frequency + context + position of each topic word (step 2)."""
    position = np.array([TITLE_BONUS if w in title else 0.0 for w in found.words])
    return found.share + context_weights(found) + position


@dataclass(frozen=True, slots=True)
class Drpkp:
    """Paragraph fingerprints (004): one or more per text, owner indices non-decreasing."""

    title: bool = False
    name: str = "drpkp"

    def __call__(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        words: list[str] = []
        weights: list[np.ndarray] = []
        feature_paragraph: list[int] = []
        paragraph_text: list[int] = []
        for i, text in enumerate(texts):
            title, body = self._split(text)
            for paragraph in body:
                found = topics(tagged(paragraph))
                if not found.words:
                    continue
                words.extend(found.words)
                weights.append(topic_weights(found, title))
                feature_paragraph.extend([len(paragraph_text)] * len(found.words))
                paragraph_text.append(i)
        fps = weighted_simhash(rabin_hashes(words), np.concatenate(weights or [np.zeros(0)]),
                               np.array(feature_paragraph, np.int64), len(paragraph_text))
        return _each_once(fps, np.array(paragraph_text, np.int64), len(texts))

    def _split(self, text: str) -> tuple[frozenset[str], list[str]]:
        """(title words, body paragraphs)."""
        parts = paragraphs(text)
        if self.title and len(parts) > 1:
            return frozenset(w for w, _ in tagged(parts[0])), parts[1:]
        return frozenset(), parts


def _each_once(fps: np.ndarray, owner: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Each text's distinct fingerprints in paragraph order; 0 for a text that has none."""
    per_text: list[dict[int, None]] = [{} for _ in range(count)]
    for i, fp in zip(owner.tolist(), fps.tolist(), strict=True):
        per_text[i][fp] = None
    lists = [list(found) or [0] for found in per_text]
    flat = np.array([fp for fps_of in lists for fp in fps_of], np.uint64)
    return flat, np.repeat(np.arange(count), [len(fps_of) for fps_of in lists])
