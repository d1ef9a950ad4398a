from dataclasses import replace

import numpy as np
import pytest

from stream_dedup.config import Settings
from stream_dedup.engine.index.layout import BUDGET, Layout, hamming, index_capacity, make_layout

pytestmark = pytest.mark.unit


def test_blocks_layout_is_k_plus_one_tables() -> None:
    layout = Layout.blocks(3)
    assert len(layout.tables) == 4
    assert [layout.key_bits(t) for t in range(4)] == [16, 16, 16, 16]


def test_permuted_layout_counts_tables() -> None:
    layout = make_layout("permuted", 3, 6)
    assert len(layout.tables) == 20  # C(6, 3)
    assert all(layout.key_bits(t) >= 31 for t in range(20))


def test_keys_are_the_block_bits() -> None:
    keys = Layout.blocks(3).keys(np.array([0x123456789ABCDEF0], dtype=np.uint64))
    assert keys[:, 0].tolist() == [0xDEF0, 0x9ABC, 0x5678, 0x1234]


def test_permuted_keys_pack_their_blocks_high_first() -> None:
    layout = Layout.permuted(2, 4)  # blocks of 16 bits, tables of two blocks
    fps = np.array([0x123456789ABCDEF0, 0, 2**64 - 1], dtype=np.uint64)
    blocks = [(int(fp) >> (16 * b)) & 0xFFFF for fp in fps for b in range(4)]
    want = [[(blocks[4 * i + hi] << 16) | blocks[4 * i + lo] for i in range(3)]
            for hi, lo in ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3))]
    assert [tuple(t) for t in layout.tables] == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    assert layout.keys(fps).tolist() == want
    assert layout.keys(fps[:0]).shape == (6, 0)


@pytest.mark.parametrize("capacity", [10**5, 10**6, 10**7, 10**8, 10**9])
def test_sized_layout_compares_at_most_the_budget(capacity: int) -> None:
    layout = make_layout("auto", 3, capacity=capacity)
    assert layout.compared(capacity) <= BUDGET
    smaller = [Layout.permuted(3, r) for r in range(4, layout.blocks_count)]
    assert all(s.compared(capacity) > BUDGET for s in smaller)  # the fewest tables that fit


def test_sized_layout_keeps_four_tables_while_they_suffice() -> None:
    assert Layout.sized(3, 500_000) == Layout.blocks(3)
    assert len(Layout.sized(3, 43_200_000).tables) == 10


def test_random_fingerprints_compare_what_the_layout_expects() -> None:
    layout = Layout.sized(3, 200_000)
    fps = np.random.default_rng(1).integers(0, 2**64, 200_000, dtype=np.uint64)
    keys = layout.keys(fps)
    sizes = [np.unique(row, return_counts=True)[1] for row in keys]
    measured = sum(float((c * c).sum()) for c in sizes) / len(fps)  # a stored fp's own buckets
    assert measured == pytest.approx(layout.compared(len(fps)) + len(layout.tables), rel=0.1)


def test_stored_bytes_are_an_entry_a_table_a_fingerprint() -> None:
    layout = Layout.sized(3, 10**8)
    assert layout.stored_bytes(10**8) == 10**8 * len(layout.tables) * 16


def test_random_fingerprints_find_the_share_of_buckets_the_layout_expects() -> None:
    layout = Layout.blocks(7)  # 8 tables of 8-bit keys
    rng = np.random.default_rng(2)
    stored = 300
    held = layout.keys(rng.integers(0, 2**64, stored, dtype=np.uint64))
    asked = layout.keys(rng.integers(0, 2**64, 20_000, dtype=np.uint64))
    found = np.mean([np.isin(a, h).mean() for a, h in zip(asked, held, strict=True)])
    assert layout.found(0) == 0
    assert found == pytest.approx(layout.found(stored), abs=0.04)
    assert layout.found(stored) == pytest.approx(1 - np.exp(-stored / 256))


def test_capacity_comes_from_the_rate_and_window_when_unset() -> None:
    s = Settings()
    assert index_capacity(s) == s.index.capacity
    unset = replace(s, index=replace(s.index, capacity=0))
    assert index_capacity(unset) == int(s.exact.expected_rate_per_s * s.window.seconds)


def test_bad_layout_is_refused() -> None:
    with pytest.raises(ValueError, match="k="):
        Layout.permuted(5, 5)


def test_hamming() -> None:
    assert hamming(np.array([0b1011], dtype=np.uint64), 0b0001).tolist() == [2]
