"""Alignment when bigrams fall short (`verify.min_align_score`): a longer text of close length
whose copy spells a number another way or carries a slip or two still matches, a number changed
is still only related, and a phrase rewritten inside is not a copy."""

import pytest

from stream_dedup.config import VerifySettings
from stream_dedup.config_file import settings_from_dict
from stream_dedup.engine.normalize import Normalizer
from stream_dedup.engine.verify import Check, similarity, verify
from stream_dedup.errors import ConfigError

pytestmark = pytest.mark.unit
NORM = Normalizer()
HEADLINE = "沪指午后跌至3124点 两市成交额放大到8765亿元"


def check(first: str, second: str, settings: VerifySettings | None = None) -> Check:
    return verify(NORM.normalize(first), NORM.normalize(second), settings or VerifySettings())


def test_a_number_spelled_out_in_a_longer_text_matches() -> None:
    later = HEADLINE.replace("8765", "八千七百六十五")
    assert not similarity(NORM.normalize(HEADLINE), NORM.normalize(later), VerifySettings())[1]
    assert check(HEADLINE, later).duplicate


def test_slips_in_a_longer_text_match_when_aligned() -> None:
    earlier = "市政府召开常务会议研究部署春节期间安全生产工作"
    later = "市政府召开常务会仪研究部署春节其间安全生产功作"  # three slips: 仪, 其, 功
    assert check(earlier, later).duplicate
    # without alignment of longer texts the same pair fails the bigram measures
    assert not check(earlier, later, VerifySettings(min_align_score=1.0)).duplicate


def test_a_number_changed_while_spelled_out_is_related() -> None:
    result = check(HEADLINE, HEADLINE.replace("8765", "八千七百五十六"))
    assert not result.duplicate and result.guard == "number"


def test_a_phrase_rewritten_inside_and_the_end_cut_is_not_a_copy() -> None:
    earlier = "省人大常委会副主任王建国在座谈会上作了重要讲话。"
    later = "省人大常委会副主任王建国等人出席了座谈。"
    assert not check(earlier, later).duplicate


def test_the_score_is_checked() -> None:
    with pytest.raises(ConfigError, match=r"verify\.min_align_score"):
        settings_from_dict({"verify": {"min_align_score": 0}})
