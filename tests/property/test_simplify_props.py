import opencc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_dedup.engine.simplify import Simplifier

pytestmark = pytest.mark.property
CONVERTER = opencc.OpenCC("t2s")
SIMPLIFIER = Simplifier(CONVERTER)
# Simplified and traditional characters, the pieces of phrases OpenCC converts whole (甚麼,
# 憑藉, 乾隆), of phrases whose characters it changes only together (么麼), and newlines.
lines = st.lists(st.sampled_from(list("今天天气很好还这個這甚麼么麼幺憑藉乾隆年間净后後发發\n 😂a")),
                 max_size=40).map("".join)


@settings(max_examples=500, deadline=None)
@given(lines)
def test_simplifier_equals_opencc(text: str) -> None:
    assert SIMPLIFIER(text) == CONVERTER.convert(text)
