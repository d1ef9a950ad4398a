"""Properties of the rolling Bloom filter: no false negatives in the window, batch = sequence."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stream_dedup.engine.bloom import BloomSizing, RollingBloom, _or_at

pytestmark = pytest.mark.property

# Small on purpose: few bits, so the generations fill and false positives occur.
SIZING = BloomSizing.from_rate(20, 10, 3, 0.05)
WINDOW_MS = 10_000

keys_st = st.integers(0, 15) | st.integers(0, 2**64 - 1)


@st.composite
def streams(draw: st.DrawFn) -> list[list[tuple[int, int]]]:
    """Batches of (key, ts_ms) with non-decreasing timestamps across the whole stream."""
    ts = draw(st.integers(-(10**6), 10**12))
    batches = []
    for size in draw(st.lists(st.integers(1, 12), max_size=12)):
        batch = []
        for key in draw(st.lists(keys_st, min_size=size, max_size=size)):
            ts += draw(st.integers(0, 4000))
            batch.append((key, ts))
        batches.append(batch)
    return batches


def as_arrays(batch: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    keys, ts = zip(*batch, strict=True)
    return np.array(keys, dtype=np.uint64), np.array(ts, dtype=np.int64)


@given(streams())
def test_never_absent_for_a_key_added_within_the_window(batches) -> None:
    bloom = RollingBloom(SIZING)
    last_added: dict[int, int] = {}
    for batch in batches:
        keys, ts = as_arrays(batch)
        found = bloom.contains_add(keys, ts)
        for (key, t), hit in zip(batch, found, strict=True):
            if key in last_added and t - last_added[key] < WINDOW_MS:
                assert hit
            last_added[key] = t
        now = batch[-1][1]
        recent = [key for key, t in last_added.items() if now - t < WINDOW_MS]
        assert bloom.contains(np.array(recent, dtype=np.uint64)).all()


@st.composite
def unordered_batches(draw: st.DrawFn) -> list[list[tuple[int, int]]]:
    """Batches whose timestamps lie anywhere up to the batch's own 'now', which only grows."""
    now = draw(st.integers(0, 10**9))
    batches = []
    for _ in range(draw(st.integers(1, 8))):
        now += draw(st.integers(0, 8000))
        ages = draw(st.lists(st.integers(0, 20_000), min_size=1, max_size=12))
        batches.append([(draw(keys_st), now - age) for age in ages])
    return batches


@given(unordered_batches())
def test_contains_add_answers_what_contains_said_before_the_add(batches) -> None:
    bloom = RollingBloom(SIZING)
    for batch in batches:
        keys, ts = as_arrays(batch)
        bloom.advance(int(ts.max()))  # so that the call itself does not rotate
        before = bloom.contains(keys)
        seen: set[int] = set()
        expected = []
        for (key, _), hit in zip(batch, before, strict=True):
            expected.append(bool(hit) or key in seen)
            seen.add(key)
        assert bloom.contains_add(keys, ts).tolist() == expected


@given(unordered_batches())
def test_a_batch_leaves_the_same_bits_as_one_key_at_a_time(batches) -> None:
    batched, single = RollingBloom(SIZING), RollingBloom(SIZING)
    for batch in batches:
        keys, ts = as_arrays(batch)
        found = batched.contains_add(keys, ts)
        one_by_one = [
            single.contains_add(keys[i : i + 1], ts[i : i + 1])[0] for i in range(len(batch))
        ]
        # One at a time may also report false positives caused by keys earlier in the batch.
        assert all(hit <= alone for hit, alone in zip(found, one_by_one, strict=True))
        assert batched.header() == single.header()
        assert np.array_equal(batched.words(), single.words())


@given(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 2**64 - 1)), max_size=40))
def test_or_at_sets_the_bits_bitwise_or_at_sets(writes: list[tuple[int, int]]) -> None:
    """Words written more than once included (8 words, up to 40 writes)."""
    index = np.array([i for i, _ in writes], dtype=np.intp)
    masks = np.array([m for _, m in writes], dtype=np.uint64)
    ours, reference = np.zeros(8, dtype=np.uint64), np.zeros(8, dtype=np.uint64)
    _or_at(ours, index, masks)
    np.bitwise_or.at(reference, index, masks)
    assert ours.tolist() == reference.tolist()


words_st = st.sampled_from([0, 2**64 - 1]) | st.integers(0, 2**64 - 1)


@given(st.lists(words_st, min_size=42, max_size=42), st.lists(keys_st, max_size=20))
def test_a_key_is_found_when_one_row_has_all_its_bits(bits: list[int], probes: list[int]) -> None:
    bloom = RollingBloom(SIZING)  # 3 rows of 14 words
    bloom._bits[...] = np.array(bits, dtype=np.uint64).reshape(bloom._bits.shape)
    keys = np.array(probes, dtype=np.uint64)
    word, mask = bloom._positions(keys)
    expected = [any(all(int(row[w]) & int(m) for w, m in zip(word[:, i], mask[:, i], strict=True))
                    for row in bloom._bits) for i in range(keys.size)]
    assert bloom.contains(keys).tolist() == expected
