import numpy as np
import pytest

from stream_dedup.records import Message
from stream_dedup.tools.eval.distances import NO_EARLIER, curve, nearest_distances
from stream_dedup.tools.eval.labelled import LabelledMessage

pytestmark = pytest.mark.unit


def test_nearest_earlier_hamming_distance() -> None:
    fps = np.array([0b0, 0b111, 0b1], np.uint64)
    got = nearest_distances(fps, np.arange(3), 3, share=0.5)
    assert got.tolist() == [NO_EARLIER, 3, 1]


@pytest.mark.parametrize(("share", "expected"), [(0.5, 1), (1.0, 30)])
def test_a_share_of_paragraphs_must_be_close(share: float, expected: int) -> None:
    far = (1 << 31) - 2  # bits 1-30: 30 bits from 0, 31 from 0b1
    # Text 0's paragraphs: 0b1 and 0. Text 1's: 0b11 (1 bit from 0b1) and `far` (30 from 0).
    # Half of two paragraphs must match: 1 bit; both must: 30 bits.
    fps = np.array([0b1, 0, 0b11, far], np.uint64)
    got = nearest_distances(fps, np.array([0, 0, 1, 1]), 2, share)
    assert got.tolist() == [NO_EARLIER, expected]


def test_curve_counts_flags_against_the_truth() -> None:
    labelled = [LabelledMessage(Message(f"m{i}", "x", i), c, k) for i, (c, k) in enumerate(
        [("a", "orig"), ("a", "dup:typo"), ("b", "neg:numbers"), ("c", "orig")])]
    c = curve("x", np.array([NO_EARLIER, 2, 1, 5]), labelled)
    assert (c.precision[1], c.recall[1]) == (0.0, 0.0)  # only the negative is flagged at t = 1
    assert (c.precision[2], c.recall[2]) == (0.5, 1.0)
    assert c.hard_negatives_flagged[0] == 0 and c.hard_negatives_flagged[1] == 1
    assert c.best() == 2
