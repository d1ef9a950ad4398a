"""Batch inserts into the block tables alone (no anchors), as the engine's probe makes them, for
the tests of how buckets are stored."""

from __future__ import annotations

import numpy as np

from stream_dedup.engine.index.layout import Layout
from stream_dedup.engine.index.probe import AnchorQuery, BatchProbe
from stream_dedup.state.store import KVStore, WriteSet


def insert(store: KVStore, layout: Layout, fps: np.ndarray, seqs: np.ndarray) -> WriteSet:
    """Probe and insert one batch; returns the writes it made."""
    n = len(fps)
    none = AnchorQuery(np.zeros(0, np.uint64), np.zeros((n, 1), int),
                       np.ones((n, 1), int), np.ones(2, int))
    probe = BatchProbe(store, layout, postings=1, stored=0)
    probe.run(fps, seqs, none, 64, 1)
    writes = WriteSet()
    probe.stage(writes)
    store.write(writes)
    return writes
