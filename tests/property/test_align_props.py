"""The compiled alignment answers difflib's opcodes on the part between the common prefix and
suffix, whatever the texts."""

from __future__ import annotations

import pytest
from difflib_reference import reference
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_dedup.engine.align import opcodes

pytestmark = pytest.mark.property

# Few characters, so that blocks repeat and tie (the earliest wins), and ones outside the basic
# plane or lone surrogates.
texts = st.text(st.sampled_from("ab的是了😀\ud800"), max_size=40)
# Long texts of more characters: ranges matched where a character occurs, not cell by cell.
long_texts = st.text(st.sampled_from("abcdefg的是了不一人有这"), min_size=120, max_size=400)


@settings(max_examples=500, deadline=None)
@given(texts, texts)
def test_same_opcodes_as_difflib(a: str, b: str) -> None:
    assert opcodes(a, b) == reference(a, b)


@settings(max_examples=300, deadline=None)
@given(texts, st.lists(st.tuples(st.integers(0, 40), st.integers(0, 3), texts), max_size=4))
def test_edited_copies_align_as_difflib(a: str, edits: list[tuple[int, int, str]]) -> None:
    b = a
    for at, cut, put in edits:
        b = b[:at] + put[:3] + b[at + cut :]
    assert opcodes(a, b) == reference(a, b)


@settings(max_examples=100, deadline=None)
@given(long_texts, st.lists(st.tuples(st.integers(0, 400), st.integers(0, 5), texts), min_size=2,
                            max_size=6))
def test_long_edited_copies_align_as_difflib(a: str,
                                             edits: list[tuple[int, int, str]]) -> None:
    b = a
    for at, cut, put in edits:
        b = b[:at] + put[:5] + b[at + cut :]
    assert opcodes(a, b) == reference(a, b)
