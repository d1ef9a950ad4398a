"""How block tables and anchor postings are stored: key packing, and the removal of expired
messages from their buckets and postings (emptied values deleted, other entries kept in order)."""

import numpy as np
import pytest

from stream_dedup.engine.index.layout import Layout
from stream_dedup.engine.index.tables import (
    ENTRY,
    anchor_key,
    anchor_keys,
    bucket_key,
    bucket_keys,
    remove_entries,
)
from stream_dedup.state import MemoryStore
from stream_dedup.state.store import WriteSet

pytestmark = pytest.mark.unit


def test_batch_keys_equal_single_keys() -> None:
    values = np.array([0, 1, 256, 2**63, 2**64 - 1], dtype=np.uint64)  # trailing zero bytes too
    tables = np.array([0, 1, 2, 3, 0])
    assert anchor_keys(values) == [anchor_key(int(v)) for v in values]
    assert bucket_keys(2, values) == [bucket_key(2, int(v)) for v in values]
    assert bucket_keys(tables, values) == [bucket_key(int(t), int(v))
                                           for t, v in zip(tables, values, strict=True)]
    assert anchor_keys(values[:0]) == []
def test_keys_sort_by_table_then_key() -> None:
    """Big-endian keys: byte order is numeric order, so a range scan reads a table in order."""
    pairs = [(0, 2**40), (0, 255), (1, 0), (0, 256), (2, 1)]
    assert sorted(bucket_key(t, k) for t, k in pairs) == [bucket_key(t, k) for t, k in
                                                          sorted(pairs)]
    assert sorted(anchor_key(a) for a in (2**63, 1, 256)) == [anchor_key(a)
                                                               for a in (1, 256, 2**63)]


def entries(*pairs: tuple[int, int]) -> bytes:
    return np.array(list(pairs), dtype=ENTRY).tobytes()


def test_remove_entries_takes_out_only_the_given_seqs() -> None:
    layout = Layout.blocks(1)  # two tables of 32 bits
    fps = np.array([0x0000_0001_0000_0002, 0x0000_0001_0000_0003], dtype=np.uint64)
    store = MemoryStore(("blocks", "anchors"))
    keys = layout.keys(fps)
    low_a, low_b, high = (bucket_key(0, int(keys[0, 0])), bucket_key(0, int(keys[0, 1])),
                          bucket_key(1, int(keys[1, 0])))
    other = bucket_key(1, 7)
    seed = WriteSet()
    seed.put("blocks", low_a, entries((int(fps[0]), 5)))  # only the expired message: deleted
    seed.put("blocks", low_b, entries((int(fps[1]), 6)))  # only a kept message: untouched
    seed.put("blocks", high, entries((int(fps[0]), 5), (9, 8), (int(fps[1]), 6)))
    seed.put("blocks", other, entries((9, 5)))  # not one of its buckets: untouched
    seed.put("anchors", anchor_key(11), np.array([3, 5, 6], "<u8").tobytes())
    seed.put("anchors", anchor_key(12), np.array([5], "<u8").tobytes())
    seed.put("anchors", anchor_key(13), np.array([5], "<u8").tobytes())  # not posted by it
    store.write(seed)
    writes = WriteSet()
    remove_entries(store, layout, fps[:1], np.array([5], np.uint64),
                   [np.array([11, 12], np.uint64)], writes)
    store.write(writes)
    got = {cf: dict(rows) for cf, rows in store._data.items()}  # type: ignore[attr-defined]
    assert got["blocks"] == {low_b: entries((int(fps[1]), 6)),
                             high: entries((9, 8), (int(fps[1]), 6)),
                             other: entries((9, 5))}
    assert got["anchors"] == {anchor_key(11): np.array([3, 6], "<u8").tobytes(),
                              anchor_key(13): np.array([5], "<u8").tobytes()}
