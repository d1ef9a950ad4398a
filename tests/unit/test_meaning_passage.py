"""`meaning.added_passage` at every position of a text: a passage the later text puts inside is
found, one at an edge (a lead-in, a comment, a source line) or a cut never is."""

import pytest

from stream_dedup.engine.meaning import added_passage, classify

pytestmark = pytest.mark.unit
TEXT = "市政府今天召开常务会议研究部署春节期间的安全生产工作要求各部门加强值班和应急准备"
PASSAGE = "森林防火检查"  # no character of it is in TEXT: all six are the later text's own
INSIDE = 4  # shared characters needed on each side


def found(a: str, b: str, min_chars: int = 5) -> bool:
    return added_passage(a, b, classify(a, b), min_chars) is not None


def test_a_passage_is_found_only_away_from_the_edges() -> None:
    assert set(PASSAGE).isdisjoint(TEXT)
    for at in range(len(TEXT) + 1):
        later = TEXT[:at] + PASSAGE + TEXT[at:]
        assert found(TEXT, later) == (min(at, len(TEXT) - at) >= INSIDE), at


def test_the_span_returned_is_the_passage() -> None:
    later = TEXT[:10] + PASSAGE + TEXT[10:]
    span = added_passage(TEXT, later, classify(TEXT, later), 5)
    assert span is not None and later[span.j1 : span.j2] == PASSAGE


def test_cut_text_is_never_a_passage() -> None:
    for at in range(len(TEXT) - 6):
        assert not found(TEXT, TEXT[:at] + TEXT[at + 6 :]), at


def test_a_short_insertion_or_moved_text_is_not_a_passage() -> None:
    assert not found(TEXT, TEXT[:10] + PASSAGE[:2] + TEXT[10:])  # a typo's two characters
    assert not found(TEXT, TEXT[:10] + PASSAGE[:2] + TEXT[18:])  # a cut, two put in its place
    assert found(TEXT, TEXT[:10] + PASSAGE[:3] + TEXT[18:])  # three: a phrase rewritten
    assert not found(TEXT, TEXT[:10] + PASSAGE + TEXT[10:], min_chars=7)
    moved = TEXT[21:] + TEXT[:21]  # a clause moved: all of it is the earlier text's
    assert not found(TEXT, moved)
