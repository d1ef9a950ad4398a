"""Bulk load of the block tables: a window of history written as sorted SST files and ingested
(`KVStore.ingest`), instead of one read and rewrite of every touched bucket a batch.

Each table's fingerprints are sorted by their bucket key once, and every bucket becomes its
value (and sealed chunks, `chunks`), entries in seq order, as the batch insert would have left
it. The work is a sort and
a sequential write, so a window of tens of millions of messages loads in minutes; memory is a
slice of one table at a time.
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
    first byte), each table's keys ascending."""
    fps = np.asarray(fps, dtype=np.uint64)
    for t, blocks in enumerate(layout.tables):
        keys, order = _sorted(Layout(layout.max_distance, layout.bounds, (blocks,)), fps)
        stop = 0
        while stop < len(keys):
            start, stop = stop, min(stop + SLICE, len(keys))
            while stop < len(keys) and keys[stop] == keys[stop - 1]:
                stop += 1  # a bucket is never cut between two slices
            part = order[start:stop]
            entries = np.empty(len(part), dtype=ENTRY)
            entries["fp"], entries["seq"] = fps[part], seqs[part]
            firsts = run_starts(keys[start:stop]).nonzero()[0]
            names = bucket_keys(t, keys[start:stop][firsts])
            data = entries.tobytes()
            bounds = [*(firsts * ENTRY.itemsize).tolist(), len(data)]
            for name, (a, b) in zip(names, pairwise(bounds), strict=True):
                if b - a > CHUNK_BYTES:
                    yield from seal(name, data[a:b], None)
                else:
                    yield name, data[a:b]
            if progress is not None:
                progress(t * len(fps) + stop)


def _sorted(table: Layout, fps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The keys of a one-table layout ascending, and the positions of their fingerprints (a
    bucket's ascending). Made in two arrays the size of the history, a 100M-message load's
    largest: the keys are computed `SLICE` fingerprints at a time (`Layout.keys` of all at once
    holds a temporary per block of the table), then each key and its position are packed in one
    word and sorted in place, where an argsort would hold its order, the keys reordered and a
    merge buffer besides."""
    keys = np.empty(len(fps), dtype=np.uint64)
    for start in range(0, len(fps), SLICE):
        keys[start : start + SLICE] = table.keys(fps[start : start + SLICE])[0]
    width = max(len(fps) - 1, 1).bit_length()
    if table.key_bits(0) + width > 64:
        order = keys.argsort(kind="stable")
        return keys[order], order
    keys <<= np.uint64(width)
    keys |= np.arange(len(fps), dtype=np.uint64)
    keys.sort()  # distinct words: a bucket's positions ascending
    order = keys & np.uint64((1 << width) - 1)
    keys >>= np.uint64(width)
    return keys, order
