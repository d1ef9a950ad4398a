import pytest

from stream_dedup.records import Message
from stream_dedup.tools.eval.labelled import LabelledMessage
from stream_dedup.tools.eval.score import score

pytestmark = pytest.mark.unit


def _stream(*rows: tuple[str, str]) -> list[LabelledMessage]:
    return [
        LabelledMessage(Message(f"m{i}", f"text {i}", i), cluster, kind)
        for i, (cluster, kind) in enumerate(rows)
    ]


STREAM = _stream(
    ("c0", "orig"),
    ("c1", "orig"),
    ("c0", "dup:exact"),  # found
    ("c0", "dup:retweet+typo"),  # found
    ("c1", "dup:typo"),  # missed
    ("n0", "neg:numbers"),  # wrongly flagged
    ("n1", "neg:negation"),  # rightly passed
    ("c2", "orig"),  # wrongly flagged
)
FLAGS = [False, False, True, True, False, True, False, True]


def test_hand_computed_scores() -> None:
    s = score(FLAGS, STREAM)
    assert (s.tp, s.fp, s.fn, s.n) == (2, 2, 1, 8)
    assert s.precision == pytest.approx(2 / 4)
    assert s.recall == pytest.approx(2 / 3)
    assert s.f1 == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))


def test_per_kind_recall_counts_each_single_edit() -> None:
    s = score(FLAGS, STREAM)
    assert s.per_kind == {"exact": 1.0, "retweet": 1.0, "typo": 0.5}


def test_hard_negatives_flagged_overall_and_per_kind() -> None:
    s = score(FLAGS, STREAM)
    assert s.hard_negatives_flagged == pytest.approx(0.5)
    assert s.hard_negatives_per_kind == {"negation": 0.0, "numbers": 1.0}


def test_edges_give_numbers_not_errors() -> None:
    nothing = score([False, False], _stream(("c0", "orig"), ("c1", "orig")))
    assert (nothing.precision, nothing.recall, nothing.f1) == (1.0, 1.0, 1.0)
    assert nothing.hard_negatives_flagged == 0.0
    missed = score([False, False], _stream(("c0", "orig"), ("c0", "dup:exact")))
    assert (missed.precision, missed.recall, missed.f1) == (1.0, 0.0, 0.0)


def test_one_flag_per_message() -> None:
    with pytest.raises(ValueError, match="3 flags for 8 messages"):
        score([True, False, True], STREAM)
