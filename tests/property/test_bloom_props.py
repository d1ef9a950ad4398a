"""Properties of the rolling Bloom filter: no false negatives in the window, batch = sequence."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stream_dedup.engine.bloom import BloomSizing, RollingBloom

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


words_st = st.sampled_from([0, 2**64 - 1]) | st.integers(0, 2**64 - 1)


@given(st.lists(words_st, min_size=42, max_size=42), st.lists(keys_st, max_size=20))
def test_a_key_is_found_when_one_row_has_all_its_bits(bits: list[int], probes: list[int]) -> None:
    bloom = RollingBloom(SIZING)  # 3 rows of 14 words
    bloom._bits[...] = np.array(bits, dtype=np.uint64).reshape(bloom._bits.shape)
    keys = np.array(probes, dtype=np.uint64)
    expected = [any(all(int(row[p // 64]) >> (p % 64) & 1 for p in positions(key))
                    for row in bloom._bits) for key in probes]
    assert bloom.contains(keys).tolist() == expected


def positions(key: int) -> list[int]:
    """The module docstring's double hashing: (h1 + i * h2) mod m, h1 = the key, h2 = splitmix64
    of it forced odd."""
    m = SIZING.bits_per_generation
    z = (key + 0x9E3779B97F4A7C15) % 2**64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) % 2**64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) % 2**64
    h2 = (z ^ (z >> 31)) | 1
    return [(key + i * h2) % m for i in range(SIZING.hashes)]


@given(unordered_batches(), st.booleans())
def test_the_fill_counted_as_bits_are_set_is_the_bits_set(batches, restored: bool) -> None:
    """The fill and FPR come from counts kept as bits are set (and zeroed as rows rotate out),
    recounted once after a restore: always those of the bits themselves."""
    bloom = RollingBloom(SIZING)
    for batch in batches:
        bloom.contains_add(*as_arrays(batch))
    if restored:
        again = RollingBloom.restore(bloom.header(), SIZING)
        again.words()[:] = bloom.words()
        bloom = again
    rows = np.bitwise_count(bloom.words().reshape(SIZING.generations, -1)).sum(axis=1)
    fill = rows / SIZING.bits_per_generation
    assert bloom.estimated_fpr() == pytest.approx(1.0 - np.prod(1.0 - fill**SIZING.hashes))
    newest = bloom.newest_generation
    assert bloom.fill_ratio() == (0.0 if newest is None else fill[newest % SIZING.generations])
