"""The probe's own small helpers against the numpy functions they stand in for."""

import numpy as np
import pytest

from stream_dedup.engine.index.probe import _unique_counts, _unique_inverse

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
