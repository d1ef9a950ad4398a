"""Table layouts: which bits of a fingerprint key each block table (see the package docstring)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations

import numpy as np

from ...config import Settings

_U64 = np.uint64
# Entries compared a query a sized layout allows at its capacity, and the most tables it may
# use to get there (C(r, r - k) grows fast with r).
BUDGET = 32
MAX_TABLES = 64
ENTRY_BYTES = 16  # a bucket entry: fingerprint and seq (`tables.ENTRY`)


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

    @classmethod
    def sized(cls, k: int, capacity: int, budget: int = BUDGET) -> Layout:
        """The fewest tables that keep the entries compared a query within `budget` with
        `capacity` fingerprints stored; past `MAX_TABLES`, the fewest compared among those that
        stay below it."""
        fitting = []
        for r in range(k + 1, 65):
            layout = cls.permuted(k, r)
            if len(layout.tables) > MAX_TABLES:
                break
            if layout.compared(capacity) <= budget:
                return layout
            fitting.append(layout)
        return min(fitting, key=lambda layout: layout.compared(capacity))

    @property
    def blocks_count(self) -> int:
        return len(self.bounds) - 1

    def key_bits(self, table: int) -> int:
        return sum(self.bounds[b + 1] - self.bounds[b] for b in self.tables[table])

    def compared(self, stored: int) -> float:
        """Expected bucket entries a query compares with `stored` random fingerprints."""
        return stored * sum(2.0 ** -self.key_bits(t) for t in range(len(self.tables)))

    def stored_bytes(self, stored: int) -> int:
        """Bytes of bucket entries the tables hold with `stored` fingerprints."""
        return stored * len(self.tables) * ENTRY_BYTES

    def found(self, stored: int) -> float:
        """Share of a random fingerprint's bucket lookups that find a bucket with `stored`
        random fingerprints stored (a bucket of b bits is empty with probability e^(-stored/2^b)).
        """
        return 1.0 - float(np.mean([np.exp(-stored * 2.0 ** -self.key_bits(t))
                                    for t in range(len(self.tables))]))

    def describe(self, capacity: int) -> str:
        """Its tables and their cost, for the line the engine logs at start."""
        bits = sorted({self.key_bits(t) for t in range(len(self.tables))})
        return (f"{len(self.tables)} tables of {'-'.join(map(str, bits))}-bit keys "
                f"({self.blocks_count} blocks, k={self.max_distance}), "
                f"{self.stored_bytes(1)} bytes a fingerprint, "
                f"~{self.compared(capacity):.1f} entries compared a query at {capacity:,} stored")

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


def make_layout(kind: str, k: int, r: int = 0, capacity: int = 0) -> Layout:
    """The layout named in config (`index.layout`, `index.max_distance`, `index.blocks`); `auto`
    is sized to `capacity` (`index_capacity`)."""
    if kind == "auto":
        return Layout.sized(k, capacity)
    if kind == "blocks":
        return Layout.blocks(k)
    return Layout.permuted(k, r or k + 2)


def index_capacity(settings: Settings) -> int:
    """Fingerprints the tables are sized for: `index.capacity`, or when 0 the expected rate
    times the window (what the state holds once the window is full)."""
    configured = settings.index.capacity
    if configured:
        return configured
    return int(settings.exact.expected_rate_per_s * settings.window.seconds)


def configured_layout(settings: Settings) -> Layout:
    """The layout the settings choose."""
    i = settings.index
    return make_layout(i.layout, i.max_distance, i.blocks, index_capacity(settings))


def hamming(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """Bitwise Hamming distance, element-wise."""
    return np.bitwise_count(np.asarray(a, dtype=_U64) ^ np.asarray(b, dtype=_U64))
