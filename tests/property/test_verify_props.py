"""`verify.unmatched`, the answer read from lengths and the measure alone: a pair it passes
over is one that no rule of `verify` could match, relate or set apart."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_dedup.config import VerifySettings
from stream_dedup.engine import verify
from stream_dedup.engine.verify import Check, similarity, unmatched

pytestmark = pytest.mark.property
# Many characters, so that unrelated texts share few bigrams; numerals in words and digits.
characters = st.characters(min_codepoint=0x4E00, max_codepoint=0x4E3F) | st.sampled_from(
    "两百四十五245的了吗")
texts = st.text(alphabet=characters, min_size=4, max_size=60)
rules = st.builds(VerifySettings, min_jaccard=st.floats(0.3, 1),
                  min_containment=st.floats(0.5, 1), max_length_ratio=st.floats(1, 3),
                  min_chars=st.integers(1, 10), short_chars=st.integers(0, 25),
                  min_align_score=st.floats(0.3, 1))


@st.composite
def pairs(draw: st.DrawFn) -> tuple[str, str]:
    """Two unrelated texts, a text and itself with a few characters replaced in place (slips),
    or with one stretch replaced (an insertion, a cut, a rewritten clause)."""
    a = draw(texts)
    how = draw(st.sampled_from(["unrelated", "slips", "stretch"]))
    if how == "unrelated":
        return a, draw(texts)
    if how == "slips":
        b = list(a)
        for at in draw(st.lists(st.integers(0, len(a) - 1), min_size=1, max_size=3)):
            b[at] = draw(characters)
        return a, "".join(b)
    start = draw(st.integers(0, len(a)))
    end = draw(st.integers(start, len(a)))
    return a, a[:start] + draw(st.text(alphabet=characters, max_size=20)) + a[end:]


@settings(max_examples=600, deadline=None)
@given(pair=pairs(), s=rules)
def test_an_unmatched_pair_meets_no_rule_that_matches_it(pair: tuple[str, str],
                                                         s: VerifySettings) -> None:
    a, b = pair
    measured = similarity(a, b, s)
    if not unmatched(a, b, measured, s):
        return  # verified in full: nothing claimed
    score, how, _ = measured
    assert a != b and not how and min(len(a), len(b)) >= s.min_chars
    assert not verify._few_substitutions(a, b)
    assert not verify._short_pair(a, b, s)
    assert not verify._nearly(a, b, score, s)
    assert score < verify._SHARED_FOR_DIGITS  # `_similar_in_digits` not tried
    assert verify.verify(a, b, s, measured) == Check(False, score)
