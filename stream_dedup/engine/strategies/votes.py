"""The Simhash vote every research strategy ends with (seed 002), for a whole batch in numpy.

Each feature brings a 64-long row of votes (a weight times +1 where its hash has a 1 bit and -1
where it has a 0 bit, or, for P-Simhash, its SigFnl row); a fingerprint's bit i is 1 where the
rows of its features sum to more than 0. Bit i is bit i of the uint64 (least significant first),
as in `fingerprint.simhash`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .words import word_hashes

_TIE = 1e-9  # relative to the sum of the votes' sizes


def signs(hashes: np.ndarray) -> np.ndarray:
    """(n, 64) float64 of +1 where bit i of each hash is 1, else -1."""
    bits = np.unpackbits(
        np.ascontiguousarray(hashes, dtype="<u8").view(np.uint8).reshape(-1, 8),
        axis=1, bitorder="little",
    )
    return bits.astype(np.float64) * 2.0 - 1.0


def pack(rows: np.ndarray, owners: np.ndarray, count: int) -> np.ndarray:
    """Sum the rows of each owner (non-decreasing owners, 0..count-1) and pack the positive sums
    into one uint64 each; an owner without rows gets 0.

    A sum within rounding error of 0 counts as 0: equal weights voting both ways cancel exactly
    in arithmetic, and the order a text's words come in must not decide such a bit.
    """
    sums = np.zeros((count, 64), dtype=np.float64)
    scale = np.zeros((count, 64), dtype=np.float64)
    if len(owners):
        starts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])
        sums[owners[starts]] = np.add.reduceat(rows, starts, axis=0)
        scale[owners[starts]] = np.add.reduceat(np.abs(rows), starts, axis=0)
    packed = np.packbits(sums > _TIE * scale, axis=1, bitorder="little")
    return packed.view("<u8").reshape(count).astype(np.uint64)


def weighted_simhash(hashes: np.ndarray, weights: np.ndarray, owners: np.ndarray,
                     count: int) -> np.ndarray:
    """Simhash of `count` texts: feature k (hash, weight) votes for text owners[k]."""
    return pack(signs(hashes) * np.asarray(weights, np.float64)[:, None], owners, count)


def word_simhash(word_lists: Sequence[Sequence[str]],
                 weight_lists: Sequence[np.ndarray]) -> np.ndarray:
    """Simhash of each text from its words (hashed with `words.word_hashes`) and their weights."""
    flat = [w for ws in word_lists for w in ws]
    weights = np.concatenate([np.asarray(w, np.float64) for w in weight_lists] or [np.zeros(0)])
    owners = np.repeat(np.arange(len(word_lists)), [len(ws) for ws in word_lists])
    return weighted_simhash(word_hashes(flat), weights, owners, len(word_lists))
