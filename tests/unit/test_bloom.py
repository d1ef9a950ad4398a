"""Unit tests of the rolling Bloom filter: sizing, measured FPR, rotation, batches, snapshots;
and of the plain one."""

from __future__ import annotations

import math

import numpy as np
import pytest

from stream_dedup.engine.bloom import Bloom, BloomSizing, RollingBloom

pytestmark = pytest.mark.unit

# 1000 keys/s over 60 s in 4 generations of 20 s: n = 20000 keys per generation.
DESIGN = BloomSizing.from_rate(1000, 60, 4, 0.01)
# 10 keys/s over 10 s in 3 generations of 5 s: keys live 10 s to 15 s.
SMALL = BloomSizing.from_rate(10, 10, 3, 0.01)


def random_keys(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False)


def probe_keys(rng: np.random.Generator, inserted: np.ndarray, n: int) -> np.ndarray:
    probes = random_keys(rng, n)
    return probes[~np.isin(probes, inserted)]


def test_from_rate_follows_the_formulas() -> None:
    s = DESIGN
    assert s.span_ms == 20_000
    assert s.keys_per_generation == 20_000
    p = 1 - (1 - 0.01) ** (1 / 4)
    assert s.generation_fp_rate == pytest.approx(p)
    exact_m = -s.keys_per_generation * math.log(p) / math.log(2) ** 2
    assert s.bits_per_generation % 64 == 0
    assert exact_m <= s.bits_per_generation < exact_m + 64
    assert s.hashes == round(s.bits_per_generation / s.keys_per_generation * math.log(2))


def test_span_rounds_up_so_the_window_is_never_shorter() -> None:
    s = BloomSizing.from_rate(1, 1, 4, 0.01)  # 1000 ms / 3 generations
    assert s.span_ms == 334
    assert (s.generations - 1) * s.span_ms >= 1000


@pytest.mark.parametrize(
    ("args", "name"),
    [
        ((0, 60, 4, 0.01), "expected_rate_per_s"),
        ((-1, 60, 4, 0.01), "expected_rate_per_s"),
        ((math.inf, 60, 4, 0.01), "expected_rate_per_s"),
        ((math.nan, 60, 4, 0.01), "expected_rate_per_s"),
        ((10, 0, 4, 0.01), "window_s"),
        ((10, math.nan, 4, 0.01), "window_s"),
        ((10, 60, 1, 0.01), "generations"),
        ((10, 60, 2.5, 0.01), "generations"),
        ((10, 60, True, 0.01), "generations"),
        ((10, 60, 4, 0.0), "fp_rate"),
        ((10, 60, 4, 1.0), "fp_rate"),
        ((10, 60, 4, math.nan), "fp_rate"),
    ],
)
def test_bad_sizing_parameters_name_the_parameter(args: tuple, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        BloomSizing.from_rate(*args)


@pytest.mark.parametrize(
    ("field", "value"),
    [("bits_per_generation", 100), ("hashes", 0), ("hashes", 17), ("generations", 1)],
)
def test_bad_direct_sizing_names_the_field(field: str, value: int) -> None:
    fields = {
        "bits_per_generation": 6400,
        "hashes": 4,
        "generations": 3,
        "span_ms": 1000,
        "keys_per_generation": 500,
        "fp_rate": 0.01,
    }
    with pytest.raises(ValueError, match=field):
        BloomSizing(**{**fields, field: value})


def test_measured_fpr_at_design_capacity_is_within_2x_of_target() -> None:
    rng = np.random.default_rng(7)
    bloom = RollingBloom(DESIGN)
    inserted = random_keys(rng, DESIGN.keys_per_generation)
    bloom.add(inserted, np.zeros(inserted.size, dtype=np.int64))
    probes = probe_keys(rng, inserted, 200_000)

    measured = float(bloom.contains(probes).mean())
    target = DESIGN.generation_fp_rate
    print(f"one generation at capacity: measured FPR {measured:.5f}, target {target:.5f}")
    assert target / 2 <= measured <= 2 * target
    assert bloom.estimated_fpr() == pytest.approx(measured, rel=0.2)
    assert 0.45 < bloom.fill_ratio() < 0.55


def test_measured_fpr_with_every_generation_at_capacity_is_within_2x_of_fp_rate() -> None:
    rng = np.random.default_rng(8)
    bloom = RollingBloom(DESIGN)
    n = DESIGN.keys_per_generation
    inserted = random_keys(rng, n * DESIGN.generations)
    ts = np.repeat(np.arange(DESIGN.generations, dtype=np.int64) * DESIGN.span_ms, n)
    for lo in range(0, inserted.size, 1000):
        bloom.add(inserted[lo : lo + 1000], ts[lo : lo + 1000])
    probes = probe_keys(rng, inserted, 200_000)

    measured = float(bloom.contains(probes).mean())
    print(f"full window at capacity: measured FPR {measured:.5f}, target {DESIGN.fp_rate:.5f}")
    assert DESIGN.fp_rate / 2 <= measured <= 2 * DESIGN.fp_rate
    assert bloom.estimated_fpr() == pytest.approx(measured, rel=0.2)


def test_no_false_negatives_for_added_keys() -> None:
    rng = np.random.default_rng(9)
    bloom = RollingBloom(DESIGN)
    keys = random_keys(rng, 5000)
    bloom.add(keys, 0)
    assert bloom.contains(keys).all()


def test_plain_bloom_has_no_false_negatives_its_fpr_and_is_full_past_its_keys() -> None:
    rng = np.random.default_rng(10)
    bloom = Bloom(20_000, 0.01)
    inserted = random_keys(rng, 20_000)
    bloom.add(inserted[:10_000])
    bloom.add(inserted[10_000:])
    assert bloom.contains(inserted).all() and not bloom.full
    measured = float(bloom.contains(probe_keys(rng, inserted, 200_000)).mean())
    assert 0.005 <= measured <= 0.02
    bloom.add(inserted[:1])
    assert bloom.full


def test_plain_bloom_grows_as_keys_come_and_forgets_none() -> None:
    rng = np.random.default_rng(11)
    bloom = Bloom(1_000_000, 0.01)
    inserted = random_keys(rng, 300_000)
    assert bloom.memory_bytes < 100_000  # its full size, ~10 bits a key: 1.2 MB
    small = None
    for start in range(0, len(inserted), 7000):
        bloom.add(inserted[start:start + 7000])
        assert bloom.contains(inserted[:start + 7000]).all()
        if start + 7000 >= 100_000 and small is None:
            small = bloom.contains(probe_keys(rng, inserted, 100_000)).mean()
    assert float(bloom.contains(probe_keys(rng, inserted, 200_000)).mean()) <= 0.02
    assert small is not None and small <= 0.02 and not bloom.full
    assert bloom.memory_bytes > 1_100_000


def test_rotation_remembers_inside_the_window_and_forgets_after() -> None:
    assert SMALL.span_ms == 5000  # generations [0, 5000), [5000, 10000), ...
    bloom = RollingBloom(SMALL)
    old, edge, recent = (np.array([key], dtype=np.uint64) for key in (11, 22, 33))
    bloom.add(old, 0)
    bloom.add(edge, 4999)
    bloom.add(recent, 5001)

    bloom.advance(4999 + 10_000 - 1)  # within window_s of all three
    assert bloom.contains(old)[0]
    assert bloom.contains(edge)[0]
    assert bloom.contains(recent)[0]
    bloom.advance(15_000)  # generation 3: generation 0 leaves the ring
    assert not bloom.contains(old)[0]
    assert not bloom.contains(edge)[0]
    assert bloom.contains(recent)[0]  # 9999 ms old


def test_a_key_is_kept_at_most_generations_spans() -> None:
    bloom = RollingBloom(SMALL)
    key = np.array([5], dtype=np.uint64)
    bloom.add(key, 0)
    bloom.advance(14_999)  # 15 s = window_s * 3 / 2 after the start of its generation
    assert bloom.contains(key)[0]
    bloom.advance(15_000)
    assert not bloom.contains(key)[0]


def test_a_jump_past_the_whole_ring_empties_it() -> None:
    rng = np.random.default_rng(10)
    bloom = RollingBloom(SMALL)
    bloom.add(random_keys(rng, 200), np.arange(200, dtype=np.int64) * 50)
    bloom.advance(10**9)
    assert bloom.newest_generation == 10**9 // SMALL.span_ms
    assert bloom.estimated_fpr() == 0.0


def test_advance_never_moves_time_back() -> None:
    bloom = RollingBloom(SMALL)
    bloom.advance(50_000)
    bloom.advance(0)
    assert bloom.newest_generation == 10


def test_old_timestamps_go_to_the_oldest_live_generation() -> None:
    bloom = RollingBloom(SMALL)
    bloom.advance(20_000)  # generation 4: live are 2, 3, 4
    key = np.array([77], dtype=np.uint64)
    bloom.add(key, 0)
    assert bloom.contains(key)[0]
    bloom.advance(24_999)
    assert bloom.contains(key)[0]
    bloom.advance(25_000)  # generation 2 leaves
    assert not bloom.contains(key)[0]


def test_repeats_within_a_batch_are_flagged_after_the_first() -> None:
    bloom = RollingBloom(DESIGN)
    keys = np.array([1, 2, 1, 3, 2, 1], dtype=np.uint64)
    found = bloom.contains_add(keys, np.zeros(keys.size, dtype=np.int64))
    assert found.tolist() == [False, False, True, False, True, True]
    again = bloom.contains_add(keys[:3], 1)
    assert again.all()


def test_a_rotation_inside_a_batch_applies_from_its_key_on() -> None:
    key, other = 3, 4
    keys = np.array([key, key], dtype=np.uint64)
    assert RollingBloom(SMALL).contains_add(keys, np.array([0, 14_999])).tolist() == [False, True]
    # Generation 0 leaves when `other` enters generation 3, before the key comes again.
    keys = np.array([key, other, key], dtype=np.uint64)
    ts = np.array([0, 15_000, 15_001], dtype=np.int64)
    assert RollingBloom(SMALL).contains_add(keys, ts).tolist() == [False, False, False]


def test_a_batch_equals_the_same_keys_one_at_a_time() -> None:
    # SMALL's timing with room enough that no key is a false positive of another.
    roomy = BloomSizing(
        bits_per_generation=1 << 20,
        hashes=4,
        generations=SMALL.generations,
        span_ms=SMALL.span_ms,
        keys_per_generation=SMALL.keys_per_generation,
        fp_rate=SMALL.fp_rate,
    )
    rng = np.random.default_rng(11)
    keys = rng.integers(0, 50, 400).astype(np.uint64)
    ts = np.cumsum(rng.integers(-2000, 3000, 400)).astype(np.int64)
    batched, single = RollingBloom(roomy), RollingBloom(roomy)

    found = batched.contains_add(keys, ts)
    one_by_one = [single.contains_add(keys[i : i + 1], ts[i : i + 1])[0] for i in range(keys.size)]
    assert found.tolist() == one_by_one
    assert batched.header() == single.header()
    assert np.array_equal(batched.words(), single.words())


def test_contains_does_not_add_or_rotate() -> None:
    bloom = RollingBloom(SMALL)
    keys = np.array([1, 2], dtype=np.uint64)
    assert not bloom.contains(keys).any()
    assert not bloom.contains(keys).any()
    assert bloom.newest_generation is None


def test_empty_batches() -> None:
    bloom = RollingBloom(SMALL)
    empty = np.array([], dtype=np.uint64)
    assert bloom.contains_add(empty, np.array([], dtype=np.int64)).shape == (0,)
    assert bloom.contains(empty).shape == (0,)
    assert bloom.newest_generation is None


def test_keys_must_be_one_dimensional() -> None:
    with pytest.raises(ValueError, match="keys"):
        RollingBloom(SMALL).contains(np.zeros((2, 2), dtype=np.uint64))


def test_size_reports() -> None:
    bloom = RollingBloom(DESIGN)
    assert bloom.capacity == DESIGN.keys_per_generation
    assert bloom.memory_bytes == DESIGN.generations * DESIGN.bits_per_generation // 8
    assert bloom.fill_ratio() == 0.0
    assert bloom.estimated_fpr() == 0.0
    assert bloom.generation_of(-1) == -1
    assert bloom.generation_of(DESIGN.span_ms) == 1


def restored_copy(bloom: RollingBloom) -> RollingBloom:
    """What a restore of `bloom`'s snapshot makes: its header, then its words filled in."""
    restored = RollingBloom.restore(bloom.header(), SMALL)
    restored.words()[...] = bloom.words()
    return restored


def test_snapshot_round_trip() -> None:
    rng = np.random.default_rng(12)
    bloom = RollingBloom(SMALL)
    keys = random_keys(rng, 300)
    bloom.add(keys, np.arange(300, dtype=np.int64) * 40)

    restored = restored_copy(bloom)
    assert restored.header() == bloom.header()
    assert restored.newest_generation == bloom.newest_generation
    probes = np.concatenate([keys, random_keys(rng, 1000)])
    assert np.array_equal(restored.contains(probes), bloom.contains(probes))
    more, ts = random_keys(rng, 100), np.full(100, 20_000, dtype=np.int64)
    assert np.array_equal(restored.contains_add(more, ts), bloom.contains_add(more, ts))
    assert restored.header() == bloom.header()
    assert np.array_equal(restored.words(), bloom.words())


def test_words_are_a_view_of_the_bits() -> None:
    bloom = RollingBloom(SMALL)
    assert bloom.words().size * 64 == SMALL.generations * SMALL.bits_per_generation
    bloom.add(np.array([5], np.uint64), np.array([0], np.int64))
    assert bloom.words().any()


def test_snapshot_of_an_empty_filter_round_trips() -> None:
    restored = restored_copy(RollingBloom(SMALL))
    assert restored.newest_generation is None


def test_restore_with_other_sizing_says_sizing_mismatch() -> None:
    data = RollingBloom(SMALL).header()
    other = BloomSizing.from_rate(10, 10, 4, 0.01)
    with pytest.raises(ValueError, match="sizing mismatch"):
        RollingBloom.restore(data, other)


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (lambda d: d[:10], "expected"),
        (lambda d: b"XXXX" + d[4:], "magic"),
        (lambda d: d[:4] + b"\x09\x00" + d[6:], "version"),
        (lambda d: d + b"\x00" * 8, "expected"),
    ],
)
def test_restore_rejects_damaged_snapshots(mangle, message: str) -> None:
    data = RollingBloom(SMALL).header()
    with pytest.raises(ValueError, match=message):
        RollingBloom.restore(mangle(data), SMALL)
