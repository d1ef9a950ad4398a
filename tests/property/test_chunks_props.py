"""Buckets in chunks read back exactly the entries inserted and not expired, in seq order,
whatever the mix of batch inserts and expiries, and an insert writes at most a chunk a bucket
besides what it adds."""

import numpy as np
import pytest
from block_inserts import insert
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_dedup.engine.index.chunks import CHUNK, read_buckets
from stream_dedup.engine.index.layout import Layout
from stream_dedup.engine.index.tables import ENTRY, bucket_keys, remove_entries
from stream_dedup.engine.stored import TABLES
from stream_dedup.state import MemoryStore
from stream_dedup.state.store import WriteSet

pytestmark = pytest.mark.property
LAYOUT = Layout.blocks(1)  # two tables of 32 bits
POOL = np.array([0x1111_1111_2222_2222, 0x1111_1111_3333_3333, 0x4444_4444_2222_2222],
                dtype=np.uint64)  # three fingerprints, four buckets shared between them
STEP = st.one_of(st.tuples(st.just("insert"), st.lists(st.integers(0, 2), min_size=1,
                                                       max_size=90)),
                 st.tuples(st.just("expire"), st.integers(0, 200)))


@settings(max_examples=80, deadline=None)
@given(steps=st.lists(STEP, min_size=1, max_size=12))
def test_chunked_buckets_hold_the_live_entries(steps: list[tuple[str, object]]) -> None:
    store = MemoryStore(TABLES)
    live: list[tuple[int, int]] = []  # (fp, seq), seq order
    next_seq = 0
    for kind, arg in steps:
        if kind == "insert":
            fps = POOL[np.array(arg)]
            seqs = np.arange(next_seq, next_seq + len(fps), dtype=np.uint64)
            writes = insert(store, LAYOUT, fps, seqs)
            for _, _, value in writes.ops:  # a chunk at most besides the batch's own entries
                assert len(value) <= (CHUNK + 1 + len(fps)) * ENTRY.itemsize
            live += list(zip(fps.tolist(), seqs.tolist(), strict=True))
            next_seq += len(fps)
        elif live:  # the oldest `arg` live entries expire (oldest first, as the sweep does)
            gone, live = live[:arg], live[arg:]
            if gone:
                writes = WriteSet()
                fps = np.array([f for f, _ in gone], dtype=np.uint64)
                seqs = np.array([s for _, s in gone], dtype=np.uint64)
                remove_entries(store, LAYOUT, fps, seqs, [np.zeros(0, np.uint64)] * len(gone),
                               writes)
                store.write(writes)
    keys = LAYOUT.keys(POOL)
    for t in range(len(LAYOUT.tables)):
        for key in set(keys[t].tolist()):
            name = bucket_keys(t, np.array([key], dtype=np.uint64))[0]
            values, _ = read_buckets(store, [name])
            want = [(f, s) for f, s in live if int(LAYOUT.keys(np.array([f], np.uint64))[t, 0])
                    == key]
            got = np.frombuffer(values[0] or b"", dtype=ENTRY)
            assert list(zip(got["fp"].tolist(), got["seq"].tolist(), strict=True)) == want
    if not live:
        assert not list(store.scan("blocks", b"", b"\xff" * 16))
