"""Fitting corpus statistics (`stats.CorpusStats`) on a stream's normalized texts.

Only texts are read, never labels: `stream-dedup fit` takes the text field of each record, and the
evaluation fits on the texts of the stream it scores (a stream's own past is fair game for a
feed; its truth is not). Three passes over the segmented texts, numpy inside each document:

1. word ids, document frequencies, neighbour pairs (for the entropies);
2. each document's top m words by TFC weight: the word pairs P-Simhash can ever damp;
3. for those pairs, over every document holding both: f11 and Σ(x_k − y_k)², giving 000's
   J(x, y) = f11/(f01 + f10 + f11) × 1/(1 + lg sqrt(1 + Σ_k (x_k − y_k)²/n)), n = f11.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ...errors import StreamDedupError
from .stats import CorpusStats
from .tfidf import tfc
from .words import words

Progress = Callable[[str, int, int], None]
"""Called with (pass name, documents done, documents in all)."""

_CHUNK = 500


def fit(texts: Sequence[str], top_m: int, progress: Progress | None = None) -> CorpusStats:
    """Fit statistics on normalized texts; raises StreamDedupError when they hold no word."""
    vocab: dict[str, int] = {}
    sequences = []
    for done, text in enumerate(texts, start=1):
        sequences.append(np.fromiter((vocab.setdefault(w, len(vocab)) for w in words(text)),
                                     np.int64))
        _tell(progress, "segment", done, len(texts))
    if not vocab:
        raise StreamDedupError("no words to fit corpus statistics on: the input has no text")
    docs = [np.unique(seq, return_counts=True) for seq in sequences]
    df = np.bincount(np.concatenate([ids for ids, _ in docs]), minlength=len(vocab))
    left, right = _neighbour_entropy(sequences, len(vocab))
    idf = np.log10(len(texts) / np.maximum(df, 1) + 0.01)
    keys = _candidate_pairs(docs, idf, top_m)
    jaccard = _pair_jaccard(docs, keys, df, progress)
    return CorpusStats(len(texts), np.array(list(vocab)), df, left, right, keys, jaccard, top_m)


def _tell(progress: Progress | None, name: str, done: int, total: int) -> None:
    if progress is not None and (done % 10_000 == 0 or done == total):
        progress(name, done, total)


def _neighbour_entropy(sequences: list[np.ndarray], size: int) -> tuple[np.ndarray, np.ndarray]:
    """Entropy (nats) of each word's left and of its right neighbours; a text's edge counts as a
    neighbour of its own kind."""
    out = []
    for side in ("left", "right"):
        keys = []
        for seq in sequences:
            if side == "left":
                other = np.r_[-1, seq[:-1]] if len(seq) else seq
            else:
                other = np.r_[seq[1:], -2] if len(seq) else seq
            keys.append(seq * (size + 2) + other + 2)
        pairs, counts = np.unique(np.concatenate(keys), return_counts=True)
        word = pairs // (size + 2)
        total = np.bincount(word, weights=counts, minlength=size)
        p = counts / total[word]
        out.append(np.bincount(word, weights=-p * np.log(p), minlength=size))
    return out[0], out[1]


def _pair_keys(ids: np.ndarray) -> np.ndarray:
    """(i << 32) | j for every pair i < j of sorted distinct ids."""
    a, b = np.triu_indices(len(ids), k=1)
    return (ids[a].astype(np.uint64) << np.uint64(32)) | ids[b].astype(np.uint64)


def _candidate_pairs(docs: list[tuple[np.ndarray, np.ndarray]], idf: np.ndarray,
                     top_m: int) -> np.ndarray:
    keys = []
    for ids, counts in docs:
        if len(ids) < 2:
            continue
        top = ids[np.argsort(-tfc(counts, idf[ids]), kind="stable")[:top_m]]
        keys.append(_pair_keys(np.sort(top)))
    return np.unique(np.concatenate(keys)) if keys else np.zeros(0, np.uint64)


def _pair_jaccard(docs: list[tuple[np.ndarray, np.ndarray]], keys: np.ndarray, df: np.ndarray,
                  progress: Progress | None) -> np.ndarray:
    if not len(keys):
        return np.zeros(0)
    in_pairs = np.zeros(len(df), bool)
    in_pairs[(keys >> np.uint64(32)).astype(np.int64)] = True
    in_pairs[(keys & np.uint64(0xFFFFFFFF)).astype(np.int64)] = True
    both = np.zeros(len(keys))
    squares = np.zeros(len(keys))
    found, diffs = [], []
    for done, (ids, counts) in enumerate(docs, start=1):
        keep = in_pairs[ids]
        ids, counts = ids[keep], counts[keep]
        if len(ids) >= 2:
            doc_keys = _pair_keys(ids)
            pos = np.minimum(np.searchsorted(keys, doc_keys), len(keys) - 1)
            hit = keys[pos] == doc_keys
            a, b = np.triu_indices(len(ids), k=1)
            found.append(pos[hit])
            diffs.append(((counts[a] - counts[b]) ** 2)[hit])
        if done % _CHUNK == 0 or done == len(docs):
            if found:
                flat = np.concatenate(found)
                both += np.bincount(flat, minlength=len(keys))
                squares += np.bincount(flat, weights=np.concatenate(diffs), minlength=len(keys))
            found, diffs = [], []
        _tell(progress, "co-occurrence", done, len(docs))
    x = df[(keys >> np.uint64(32)).astype(np.int64)]
    y = df[(keys & np.uint64(0xFFFFFFFF)).astype(np.int64)]
    return jaccard_000(both, x, y, squares)


def jaccard_000(both: np.ndarray, docs_x: np.ndarray, docs_y: np.ndarray,
                squares: np.ndarray) -> np.ndarray:
    """000 formula 5 from f11 (docs with both), n_x and n_y (docs with each, so f10 = n_x − f11,
    f01 = n_y − f11) and Σ_k (x_k − y_k)² over the f11 documents."""
    n = np.maximum(both, 1)
    overlap = both / (docs_x + docs_y - both)
    return overlap / (1 + np.log10(np.sqrt(1 + squares / n)))
