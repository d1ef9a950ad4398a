"""Bulk load of the block tables: a window of history written as sorted SST files and ingested
(`KVStore.ingest`), instead of one read and rewrite of every touched bucket a batch.

Each table's fingerprints are sorted by their bucket key once, and every bucket becomes its
value (and sealed chunks, `chunks`), entries in seq order, as the batch insert would have left
it. The work is a sort and a sequential write, so a window of tens of millions of messages loads
in minutes. Memory past the history itself is bounded: a table is sorted in parts of at most
`PART` entries, one range of its keys at a time (the top bits of its highest block pick the
part), so a 100M-message load holds ~30 bytes a message of the part besides one byte a message
naming each one's part, not three 8-byte arrays the size of the history.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import pairwise

import numpy as np

from ...state.store import KVStore
from ..fingerprint import run_starts
from .chunks import CHUNK, seal
from .layout import Layout
from .tables import ENTRY, bucket_keys

SLICE = 1 << 21  # entries of one table cut into values at a time
PART = 1 << 22  # fingerprints of one table sorted at a time, on average
_U64 = np.uint64
CHUNK_BYTES = CHUNK * ENTRY.itemsize


def load(store: KVStore, layout: Layout, fps: np.ndarray, seqs: np.ndarray,
         progress: Callable[[int], None] | None = None) -> int:
    """Add every (fingerprint, seq) to every table of an index that holds none of their
    buckets yet (a new state), seqs ascending; returns the buckets written. `progress` is
    called with the entries written so far."""
    return store.ingest("blocks", _buckets(layout, fps, seqs, progress))


def _buckets(layout: Layout, fps: np.ndarray, seqs: np.ndarray,
             progress: Callable[[int], None] | None) -> Iterator[tuple[bytes, bytes]]:
    """(bucket key, packed entries) of every bucket, in key order: table by table (a key's
    first byte), each table's keys ascending, part by part (`_parts`)."""
    fps = np.asarray(fps, dtype=np.uint64)
    done = 0
    for t, blocks in enumerate(layout.tables):
        table = Layout(layout.max_distance, layout.bounds, (blocks,))
        for part in _parts(table, fps):
            keys, order = _sorted(table, fps, part)
            stop = 0
            while stop < len(keys):
                start, stop = stop, min(stop + SLICE, len(keys))
                while stop < len(keys) and keys[stop] == keys[stop - 1]:
                    stop += 1  # a bucket is never cut between two slices
                yield from _values(t, keys[start:stop], fps, seqs, order[start:stop])
                if progress is not None:
                    progress(done + stop)
            done += len(keys)


def _values(table: int, keys: np.ndarray, fps: np.ndarray, seqs: np.ndarray,
            positions: np.ndarray) -> Iterator[tuple[bytes, bytes]]:
    """The buckets of a slice of one table's sorted keys (`positions`: their fingerprints')."""
    entries = np.empty(len(positions), dtype=ENTRY)
    entries["fp"], entries["seq"] = fps[positions], seqs[positions]
    firsts = run_starts(keys).nonzero()[0]
    names = bucket_keys(table, keys[firsts])
    data = entries.tobytes()
    bounds = [*(firsts * ENTRY.itemsize).tolist(), len(data)]
    for name, (a, b) in zip(names, pairwise(bounds), strict=True):
        if b - a > CHUNK_BYTES:
            yield from seal(name, data[a:b], None)
        else:
            yield name, data[a:b]


def _parts(table: Layout, fps: np.ndarray) -> Iterator[np.ndarray]:
    """Positions of the fingerprints of each part of a one-table layout, parts in key order: the
    fewest parts (a power of two, up to 256 and the highest block's values) of at most `PART`
    fingerprints each on average, told apart by the top bits of the key's highest block."""
    first = table.tables[0][0]
    width = table.bounds[first + 1] - table.bounds[first]
    bits = min(max(0, (len(fps) - 1) // PART).bit_length(), 8, width)
    if not bits:
        yield np.arange(len(fps))
        return
    which = np.empty(len(fps), dtype=np.uint8)
    shift, mask = _U64(table.bounds[first + 1] - bits), _U64((1 << bits) - 1)
    for start in range(0, len(fps), SLICE):
        which[start : start + SLICE] = (fps[start : start + SLICE] >> shift) & mask
    for part in range(1 << bits):
        yield np.flatnonzero(which == part)


def _sorted(table: Layout, fps: np.ndarray,
            positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The keys of a one-table layout of the fingerprints at `positions` ascending, and those
    positions in that order (a bucket's ascending): each key and its position packed in one word
    and sorted in place, where an argsort would hold its order, the keys reordered and a merge
    buffer besides."""
    keys = table.keys(fps[positions])[0]
    width = max(len(fps) - 1, 1).bit_length()
    if table.key_bits(0) + width > 64:
        order = keys.argsort(kind="stable")
        return keys[order], positions[order]
    keys <<= _U64(width)
    keys |= positions.astype(np.uint64)
    keys.sort()  # distinct words: a bucket's positions ascending
    order = (keys & _U64((1 << width) - 1)).astype(np.int64)
    keys >>= _U64(width)
    return keys, order
