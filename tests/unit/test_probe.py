"""The probe's own small helpers against the numpy functions they stand in for, and its filter
of what the index holds."""

from collections import Counter
from collections.abc import Sequence

import numpy as np
import pytest

from stream_dedup.engine.bloom import Bloom
from stream_dedup.engine.index.layout import Layout
from stream_dedup.engine.index.probe import (
    AnchorQuery,
    BatchProbe,
    _unique_counts,
    _unique_inverse,
)
from stream_dedup.engine.stored import TABLES
from stream_dedup.state import MemoryStore, WriteSet

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("size", [0, 1, 7, 300])
def test_unique_helpers_equal_np_unique(size: int) -> None:
    rng = np.random.default_rng(size)
    values = rng.integers(0, 20, size).astype(np.uint64) << np.uint64(40)
    uniq, inverse = _unique_inverse(values)
    want, want_inverse = np.unique(values, return_inverse=True)
    assert uniq.tolist() == want.tolist() and inverse.tolist() == want_inverse.tolist()
    keys, counts = _unique_counts(values)
    want, want_counts = np.unique(values, return_counts=True)
    assert keys.tolist() == want.tolist() and counts.tolist() == want_counts.tolist()


def test_a_filter_of_what_was_written_finds_and_writes_the_same() -> None:
    """With a filter of the anchors and buckets written (a new index), batch after batch, the
    probe finds the same candidates, compares the same entries and writes the same values as
    one that looks everything up, while looking up fewer keys."""
    rng = np.random.default_rng(5)
    layout = Layout.permuted(3, 4)
    sources = rng.integers(0, 2**64, 40, dtype=np.uint64)
    looked_up: Counter[tuple[bool, str]] = Counter()

    class Counting(MemoryStore):
        def __init__(self, filtered: bool) -> None:
            super().__init__(TABLES)
            self.filtered = filtered

        def get_many(self, cf: str, keys: Sequence[bytes]) -> list[bytes | None]:
            looked_up[self.filtered, cf] += len(keys)
            return super().get_many(cf, keys)

    stores = {filtered: Counting(filtered) for filtered in (False, True)}
    written = Bloom(10_000, 0.01)
    seq = 1
    for _ in range(8):
        n = 30
        picked = sources[rng.integers(0, len(sources), n)]
        flips = rng.integers(0, 64, (n, 3)).astype(np.uint64)
        fps = picked ^ np.bitwise_or.reduce(np.uint64(1) << flips, axis=1)
        seqs = np.arange(seq, seq + n, dtype=np.uint64)
        seq += n
        values = rng.integers(0, 200, (n, 4)).astype(np.uint64)
        values.sort(axis=1)
        query = AnchorQuery(values.ravel(), np.full((n, 1), 4), np.ones((n, 1), int),
                            np.arange(1, 10, dtype=np.int64)[::-1].copy())
        found = {}
        for filtered, store in stores.items():
            probe = BatchProbe(store, layout, 5, 2, written if filtered else None)
            found[filtered] = probe.run(fps, seqs, query, 12, 6)
            writes = WriteSet()
            probe.stage(writes)
            store.write(writes)
            found[filtered, "writes"] = writes.ops
        assert found[True] == found[False]
        assert found[True, "writes"] == found[False, "writes"]
    for table in ("anchors", "blocks"):
        assert looked_up[True, table] < looked_up[False, table]
