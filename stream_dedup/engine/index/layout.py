"""Table layouts: which bits of a fingerprint key each block table (see the package docstring)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations

import numpy as np

_U64 = np.uint64


@dataclass(frozen=True, slots=True)
class Layout:
    """r blocks of the 64 bits, and the blocks each table keys on.

    `bounds[i]` .. `bounds[i+1]` are the bit positions of block i; `tables[t]` lists the blocks
    table t keys on. Any two fingerprints within `max_distance` bits share a bucket in some table.
    """

    max_distance: int
    bounds: tuple[int, ...]
    tables: tuple[tuple[int, ...], ...]

    @classmethod
    def blocks(cls, k: int) -> Layout:
        """k + 1 blocks, one table per block."""
        return cls.permuted(k, k + 1)

    @classmethod
    def permuted(cls, k: int, r: int) -> Layout:
        """r blocks; one table for every choice of r - k of them."""
        if not 0 <= k < r <= 64:
            raise ValueError(f"need 0 <= k < r <= 64, got k={k}, r={r}")
        bounds = tuple(int(b) for b in np.linspace(0, 64, r + 1).round().astype(int))
        return cls(k, bounds, tuple(combinations(range(r), r - k)))

    def key_bits(self, table: int) -> int:
        return sum(self.bounds[b + 1] - self.bounds[b] for b in self.tables[table])

    def keys(self, fps: np.ndarray) -> np.ndarray:
        """Bucket key of every fingerprint in every table: uint64 array (tables, len(fps)).

        The key is the table's block bits packed together (high blocks first): every block of
        every table shifted into place at once, then OR-ed per table (a loop over tables and
        blocks was ~30 numpy calls a batch)."""
        low, mask, shift, starts = _pieces(self.bounds, self.tables)
        fps = np.asarray(fps, dtype=_U64)
        return np.bitwise_or.reduceat(((fps >> low) & mask) << shift, starts, axis=0)


@lru_cache(maxsize=16)
def _pieces(bounds: tuple[int, ...], tables: tuple[tuple[int, ...], ...]
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per (table, block), table by table, columns for broadcasting: the block's lowest bit in
    the fingerprint, its mask, its place in the table's key; and where each table's rows start."""
    low, mask, shift, starts = [], [], [], []
    for blocks in tables:
        starts.append(len(low))
        place = 0
        for b in reversed(blocks):  # the last block is the lowest bits of the key
            lo, hi = bounds[b], bounds[b + 1]
            low.append(lo)
            mask.append((1 << (hi - lo)) - 1)
            shift.append(place)
            place += hi - lo
    column = [np.array(v, dtype=_U64)[:, None] for v in (low, mask, shift)]
    return column[0], column[1], column[2], np.array(starts, dtype=np.intp)


def make_layout(kind: str, k: int, r: int = 0) -> Layout:
    """The layout named in config (`index.layout`, `index.max_distance`, `index.blocks`)."""
    if kind == "blocks":
        return Layout.blocks(k)
    return Layout.permuted(k, r or k + 2)


def hamming(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """Bitwise Hamming distance, element-wise."""
    return np.bitwise_count(np.asarray(a, dtype=_U64) ^ np.asarray(b, dtype=_U64))
