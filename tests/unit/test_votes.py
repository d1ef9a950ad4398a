import numpy as np
import pytest

from stream_dedup.engine.strategies.votes import pack, signs, weighted_simhash

pytestmark = pytest.mark.unit


def test_weighted_vote_by_hand() -> None:
    # h1 = 0101 votes +2 on bits 0 and 2, -2 elsewhere; h2 = 0011 votes +1 on bits 0 and 1.
    # bit 0: 2+1 > 0; bit 1: -2+1 < 0; bit 2: 2-1 > 0; bit 3 and up: -3 < 0  ->  0101 = 5
    fps = weighted_simhash(np.array([0b0101, 0b0011], np.uint64), np.array([2.0, 1.0]),
                           np.array([0, 0]), 1)
    assert fps.tolist() == [5]


def test_a_tie_is_a_zero_bit_whatever_the_order() -> None:
    weights = np.array([0.1, 0.2, 0.1, 0.2])
    hashes = np.array([1, 2, 2, 1], np.uint64)  # bit 0: .1 - .2 - .1 + .2 = 0 in arithmetic
    forward = weighted_simhash(hashes, weights, np.zeros(4, np.int64), 1)
    backward = weighted_simhash(hashes[::-1], weights[::-1], np.zeros(4, np.int64), 1)
    assert forward.tolist() == backward.tolist() == [0]


def test_signs_are_bit_i_of_the_integer() -> None:
    row = signs(np.array([1 << 63 | 1], np.uint64))[0]
    assert row[0] == 1 and row[63] == 1 and set(row[1:63]) == {-1}


def test_owner_without_features_gets_zero() -> None:
    rows = np.ones((2, 64))
    assert pack(rows, np.array([0, 2]), 3).tolist() == [2**64 - 1, 0, 2**64 - 1]
