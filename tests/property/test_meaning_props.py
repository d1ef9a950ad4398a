"""Clause structure in the meaning check: clauses moved say the same, whatever their order."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_dedup.engine.meaning import classify
from stream_dedup.engine.normalize import Normalizer

pytestmark = pytest.mark.property
NORMALIZER = Normalizer()
# Real clauses of reviews and chat, from one word to a sentence.
CLAUSES = ["好评", "谢谢", "物流很快", "质量不错", "包装结实", "客服态度非常好", "下次还来",
           "五星", "价格实惠", "送货上门", "中国队击败了日本队", "亲"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(CLAUSES), min_size=2, max_size=5, unique=True).flatmap(
    lambda cs: st.tuples(st.just(cs), st.permutations(cs))),
    st.sampled_from(["，", "。", "！", "、", "~"]))
def test_clauses_moved_are_a_reorder(orders: tuple[list[str], list[str]], mark: str) -> None:
    first, second = (mark.join(order) for order in orders)
    (a, b), (_, clauses) = NORMALIZER.with_clauses([first, second])
    assert {span.kind for span in classify(a, b, None, clauses)} <= {"reorder"}


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(CLAUSES[:-2]), min_size=1, max_size=4, unique=True).flatmap(
    lambda cs: st.tuples(st.just(["中国队击败了日本队", *cs]),
                         st.permutations(["日本队击败了中国队", *cs]))),
    st.sampled_from(["，", "。", "！"]))
def test_words_traded_inside_a_clause_are_a_swap_wherever_it_went(
        orders: tuple[list[str], list[str]], mark: str) -> None:
    first, second = (mark.join(order) for order in orders)
    (a, b), (_, clauses) = NORMALIZER.with_clauses([first, second])
    assert "swap" in {span.kind for span in classify(a, b, None, clauses)}
