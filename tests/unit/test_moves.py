"""Text moved elsewhere: a moved clause is a reorder, words traded inside one a swap; where the
later text's clauses end tells a clause from words."""

import pytest

from stream_dedup.engine.lexicon import lexicon
from stream_dedup.engine.meaning import classify, opcodes
from stream_dedup.engine.moves import moved_spans, reordered
from stream_dedup.engine.normalize import Normalizer

pytestmark = pytest.mark.unit
NORM = Normalizer()


def clause_kinds(first: str, second: str) -> set[str]:
    """The span classes with the later text's clause ends known, as the engine reads them."""
    (a, b), (_, clauses) = NORM.with_clauses([first, second])
    return {span.kind for span in classify(a, b, None, clauses)}


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("好评，谢谢", "谢谢，好评"),
        ("发货很快，质量好", "质量好，发货很快"),
        ("物流快，好评，包装结实", "包装结实，物流快，好评"),
        ("物流快，好评，包装结实，满意", "好评，物流快，包装结实，满意了"),  # and a particle added
    ],
)
def test_a_moved_clause_is_a_reorder(first: str, second: str) -> None:
    assert clause_kinds(first, second) <= {"reorder", "noise", "material"}
    assert "reorder" in clause_kinds(first, second)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("中国队击败了日本队", "日本队击败了中国队"),
        ("太阳队总决赛赢了雄鹿队，比分一百比九十", "雄鹿队总决赛赢了太阳队，比分一百比九十"),
        ("比分一百比九十，太阳队赢了雄鹿队", "比分一百比九十，雄鹿队赢了太阳队"),
        ("太阳队赢了雄鹿队，比分一百比九十", "比分一百比九十，雄鹿队赢了太阳队"),  # and it moved
    ],
)
def test_words_trading_places_inside_a_clause_stay_a_swap(first: str, second: str) -> None:
    assert "swap" in clause_kinds(first, second)
def moves(first: str, second: str, with_clauses: bool = True) -> tuple[str | None, set[str]]:
    """What `reordered` and `moved_spans` call the differing spans of two texts."""
    (a, b), (_, clauses) = NORM.with_clauses([first, second])
    clauses = clauses if with_clauses else ()
    spans = [op for op in opcodes(a, b) if op[0] != "equal"]
    return (reordered(a, b, spans, lexicon(), clauses),
            set(moved_spans(a, b, spans, lexicon(), clauses).values()))


def test_a_clause_end_makes_two_moved_words_a_reorder() -> None:
    assert moves("好评，谢谢", "谢谢，好评") == ("reorder", {"reorder"})
    assert moves("好评，谢谢", "谢谢，好评", with_clauses=False) == ("swap", {"swap"})


def test_crossed_words_are_a_swap() -> None:
    assert moves("中国队击败了日本队", "日本队击败了中国队") == ("swap", {"swap"})


def test_other_characters_are_not_a_move() -> None:
    assert moves("发货很快，质量好", "发货很快，质量差") == (None, set())
