"""Verification of one pair: what is similar enough to be checked for meaning."""

import pytest

from stream_dedup.config import VerifySettings
from stream_dedup.normalize import Normalizer
from stream_dedup.verify import similarity, verify

pytestmark = pytest.mark.unit
NORM = Normalizer()
EARLIER = NORM.normalize("民校违规招生245名 低分学生成高中黑户")


def test_numbers_in_words_are_measured_in_digits() -> None:
    # six characters for three cost the bigram measure more than a copy may lose
    later = EARLIER.replace("245", "两百四十五")
    assert not similarity(EARLIER, later, VerifySettings())[1]
    assert verify(EARLIER, later, VerifySettings()).duplicate
    other = verify(EARLIER, EARLIER.replace("245", "两百四十六"), VerifySettings())
    assert not other.duplicate and other.guard == "number"
