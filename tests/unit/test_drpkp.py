import numpy as np
import pytest

from stream_dedup.engine.normalize import PARAGRAPH_BREAK
from stream_dedup.engine.strategies.drpkp import (
    CONTEXT_STEP,
    Drpkp,
    Topics,
    context_weights,
    topic_weights,
    topics,
)

pytestmark = pytest.mark.unit


def test_topic_words_are_the_frequent_nouns_and_verbs() -> None:
    # Nouns and verbs: 经济 经济 发展 -> p = 2/3, 1/3; 的 很 好 are left out.
    found = topics([("经济", "n"), ("的", "uj"), ("发展", "vn"), ("经济", "n"), ("很", "d"),
                    ("好", "a")])
    assert found.words == ("经济", "发展")
    assert found.share == pytest.approx([2 / 3, 1 / 3])
    assert found.starts == {"经济": [0, 5], "发展": [3]}


def test_context_adds_a_tenth_of_n_for_n_topic_words_in_one_window() -> None:
    # Window 0 (characters 0-19) holds 经济 and 发展: +0.2 each. Window 1 holds 经济 and 市场 and
    # 改革: +0.3 each. Window 2 holds 改革 alone: nothing.
    found = Topics(("经济", "发展", "市场", "改革"), np.array([0.4, 0.2, 0.2, 0.2]),
                   {"经济": [0, 25], "发展": [3], "市场": [30], "改革": [35, 45]})
    assert context_weights(found) == pytest.approx([0.5, 0.2, 0.3, 0.3])
    assert CONTEXT_STEP == 0.1


def test_title_words_get_the_position_weight() -> None:
    found = Topics(("经济", "发展"), np.array([0.5, 0.5]), {"经济": [0], "发展": [40]})
    weights = topic_weights(found, frozenset({"发展"}))
    assert weights[1] - weights[0] == pytest.approx(0.5)


def test_one_fingerprint_per_distinct_paragraph() -> None:
    p1 = "国家统计局今天发布了经济数据"
    p2 = "专家认为市场需求继续增长"
    fps, owner = Drpkp()([p1 + PARAGRAPH_BREAK + p2 + PARAGRAPH_BREAK + p1, p2, "很好很好"])
    assert owner.tolist() == [0, 0, 1, 2]
    assert fps[1] == fps[2]  # the same paragraph in two texts
    assert fps[3] == 0  # no noun or verb


def test_the_title_line_is_not_fingerprinted() -> None:
    body = "国家统计局今天发布了经济数据"
    with_title, _ = Drpkp(title=True)(["新的标题" + PARAGRAPH_BREAK + body])
    assert len(with_title) == 1
