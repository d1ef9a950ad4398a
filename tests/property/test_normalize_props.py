import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_dedup.normalize import Normalizer, nfkc

pytestmark = pytest.mark.property
NORMALIZER = Normalizer()
feedish = st.text(
    alphabet=st.sampled_from(list("今天天气很好不错的我们@#【】[]//:：，。!？ 1２ａBc😂&;<>http.cn/")),
    max_size=60,
) | st.text(max_size=40)


@settings(max_examples=300, deadline=None)
@given(feedish)
def test_normalize_is_idempotent(text: str) -> None:
    once = NORMALIZER.normalize(text)
    assert NORMALIZER.normalize(once) == once


@settings(max_examples=300, deadline=None)
@given(feedish)
def test_output_keeps_letters_and_digits_only(text: str) -> None:
    assert all(ch.isalnum() for ch in NORMALIZER.normalize(text))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=30))
def test_fast_nfkc_equals_unicodedata(text: str) -> None:
    assert nfkc(text) == unicodedata.normalize("NFKC", text)
