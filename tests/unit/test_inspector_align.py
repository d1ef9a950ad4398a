"""Two normalized texts as aligned rows, each differing span with its class."""

import pytest

from stream_dedup.engine.meaning import classify
from stream_dedup.ops.inspector.align import aligned

pytestmark = pytest.mark.unit

PAIRS = [("深市今天上涨了百分之三", "深市昨天上涨了百分之五"),
         ("今天北京下雨", "据报道今天北京下雨了"),
         ("我们赢了比赛", "我们输了比赛"),
         ("相同的文本", "相同的文本")]


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_rows_rebuild_both_texts_and_carry_the_classes(a: str, b: str) -> None:
    spans = classify(a, b) if a != b else []
    rows = aligned(a, b, spans)
    assert "".join(r.left for r in rows) == a and "".join(r.right for r in rows) == b
    assert [r.kind for r in rows if r.kind] == [s.kind for s in spans]
    assert all(r.left == r.right for r in rows if r.kind is None)


def test_a_changed_date_is_its_own_row() -> None:
    rows = aligned("深市今天上涨", "深市昨天上涨", classify("深市今天上涨", "深市昨天上涨"))
    assert [(r.left, r.right, r.kind) for r in rows] == [
        ("深市", "深市", None), ("今", "昨", "date"), ("天上涨", "天上涨", None)]
