"""The compiled fingerprint kernels against the plain formulation, one text at a time in Python
integers: each n-gram folded into splitmix64's finalizer, votes counted bit by bit, and every
window's minimum taken, so the kernels' chunking, vectorized passes, lane sums and sorting must
give exactly the same fingerprints and anchors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_dedup.engine.fingerprint import Batch, anchors, mix64, ngram_hashes, simhash
from stream_dedup.engine.strategies.shingle import ShingleSimhash
from stream_dedup.engine.strategies.words import word_hashes, words

pytestmark = pytest.mark.property
_MASK = (1 << 64) - 1
# Few distinct characters: repeated grams, equal window minima, runs of one value. Long texts
# cross the 255 features summed in one lane.
texts = st.lists(st.text(alphabet="的一是不ab\x00😂", max_size=40)
                 | st.text(alphabet="的是", min_size=250, max_size=600)
                 | st.text(max_size=12), max_size=8)


def reference_mix(z: int) -> int:
    z = (z + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def reference_hashes(codes: list[int], n: int) -> list[int]:
    """Every gram of n codes folded in order; a text shorter than n, the whole of it."""
    grams = [codes[p : p + n] for p in range(len(codes) - n + 1)] or ([codes] if codes else [])
    out = []
    for gram in grams:
        h = 0
        for c in gram:
            h = reference_mix(h ^ c)
        out.append(h)
    return out


def reference_simhash(hashes: list[int]) -> int:
    votes = [sum(1 if h >> bit & 1 else -1 for h in hashes) for bit in range(64)]
    return sum(1 << bit for bit in range(64) if votes[bit] > 0)


def reference_anchors(hashes: list[int], window: int) -> list[int]:
    if not hashes:
        return []
    span = min(window, len(hashes))
    return sorted({min(hashes[i : i + span]) for i in range(len(hashes) - span + 1)})


@settings(max_examples=300, deadline=None)
@given(texts, st.integers(1, 5), st.integers(1, 12) | st.sampled_from([16, 64]))
def test_kernels_equal_the_plain_formulation(ts: list[str], n: int, window: int) -> None:
    batch = Batch.of(ts)
    per_text = [reference_hashes([ord(c) for c in t], n) for t in ts]
    hashes, owners = ngram_hashes(batch, n)
    assert hashes.tolist() == [h for hs in per_text for h in hs]
    assert owners.tolist() == [i for i, hs in enumerate(per_text) for _ in hs]
    assert simhash(batch, n).tolist() == [reference_simhash(hs) for hs in per_text]
    got = anchors(batch, n, window)
    assert [a.dtype for a in got] == [np.dtype(np.uint64)] * len(ts)
    assert [a.tolist() for a in got] == [reference_anchors(hs, window) for hs in per_text]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, _MASK), max_size=20))
def test_mix64_is_the_finalizer(values: list[int]) -> None:
    x = np.array(values, np.uint64)
    assert mix64(x).tolist() == [reference_mix(v) for v in values]
    assert x.tolist() == values  # a copy is mixed, not the argument


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(alphabet="今天北京天气很好不错", max_size=20), max_size=6),
       st.integers(1, 4))
def test_shingles_chain_word_hashes_like_characters(ts: list[str], width: int) -> None:
    # Word hashes stand in for code points: values over 32 bits through the same kernels.
    fps, owner = ShingleSimhash(width)(ts)
    assert owner.tolist() == list(range(len(ts)))
    expected = [reference_simhash(reference_hashes([int(h) for h in word_hashes(words(t))],
                                                   width)) for t in ts]
    assert fps.tolist() == expected
