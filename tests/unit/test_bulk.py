"""Bulk load of the block tables: the same buckets, entry for entry, as the batch insert leaves,
through the in-memory store and RocksDB's SST ingestion alike."""

from pathlib import Path

import numpy as np
import pytest
from block_inserts import insert

from stream_dedup.engine.index import bulk
from stream_dedup.engine.index.layout import Layout
from stream_dedup.engine.stored import TABLES
from stream_dedup.state import MemoryStore, open_store, rocksdb
from stream_dedup.state.store import KVStore

pytestmark = pytest.mark.unit


def batch_inserted(layout: Layout, fps: np.ndarray, batch: int) -> MemoryStore:
    store = MemoryStore(TABLES)
    for start in range(0, len(fps), batch):
        part = fps[start : start + batch]
        insert(store, layout, part, np.arange(start, start + len(part), dtype=np.uint64))
    return store


def buckets(store: KVStore) -> list[tuple[bytes, bytes]]:
    return list(store.scan("blocks", b"", b"\xff" * 16))


# Layout.blocks(0): one table keyed on all 64 bits, whose key and position do not share a word.
@pytest.mark.parametrize("layout", [Layout.blocks(3), Layout.sized(3, 10**8), Layout.blocks(0)])
def test_bulk_load_leaves_the_buckets_the_batch_insert_leaves(layout: Layout,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    monkeypatch.setattr(bulk, "SLICE", 7)  # buckets cut across slices are kept whole
    monkeypatch.setattr(bulk, "PART", 16)  # tables sorted in several parts
    monkeypatch.setattr(rocksdb, "INGEST_FILE_KEYS", 50)  # several files ingested together
    rng = np.random.default_rng(3)
    base = rng.integers(0, 2**64, 40, dtype=np.uint64)
    # Shared buckets, and one bucket of every table past two chunks.
    fps = np.concatenate([base, base ^ np.uint64(1), base[:10], base[:1].repeat(150)])
    want = buckets(batch_inserted(layout, fps, 16))
    seqs = np.arange(len(fps), dtype=np.uint64)
    progress: list[int] = []
    memory = MemoryStore(TABLES)
    assert bulk.load(memory, layout, fps, seqs, progress.append) == len(want)
    assert sum(len(key) == 13 for key, _ in want) == 2 * len(layout.tables)  # sealed chunks
    assert buckets(memory) == want
    assert progress[-1] == len(layout.tables) * len(fps)
    rocks = open_store("rocksdb", str(tmp_path / "state"), TABLES)
    try:
        bulk.load(rocks, layout, fps, seqs)
        assert buckets(rocks) == want
        assert not list(tmp_path.glob("state/ingest-*"))
    finally:
        rocks.close()
