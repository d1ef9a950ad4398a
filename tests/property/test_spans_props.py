"""The word pairs of a replaced span are among the words that cover it (`Lexicon.words_at`):
what lets the meaning check look for words of opposite sentiment only where both sides have a
sentiment word."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_dedup.engine.lexicon import lexicon
from stream_dedup.engine.meaning import opcodes
from stream_dedup.engine.spans import _word_pairs

pytestmark = pytest.mark.property

# Common words, sentiment words among them, and characters that make words with their
# neighbours: the pairs found reach past the span on either side.
WORDS = ["实惠", "离谱", "好", "差", "照片", "而是", "价格", "公斤", "克", "满意", "失望", "服务",
         "不错", "很", "的", "了", "房间", "干净", "脏", "酒店", "便宜", "贵", "猫", "狗"]
words = st.sampled_from(WORDS)
texts = st.lists(words, max_size=5).map("".join)


@settings(max_examples=300, deadline=None)
@given(texts, words, words, texts)
def test_word_pairs_are_words_at_the_span(left: str, old: str, new: str, right: str) -> None:
    lex = lexicon()
    a, b = left + old + right, left + new + right
    for op in opcodes(a, b):
        if op[0] == "replace":
            _, i1, i2, j1, j2 = op
            words_a, words_b = lex.words_at(a, i1, i2), lex.words_at(b, j1, j2)
            for x, y in _word_pairs(a, b, op, lex):
                assert x in words_a and y in words_b
