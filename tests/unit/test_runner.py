from collections.abc import Sequence

import pytest

from stream_dedup.records import Message
from stream_dedup.tools.eval.labelled import LabelledMessage
from stream_dedup.tools.eval.runner import run

pytestmark = pytest.mark.unit

STREAM = [
    LabelledMessage(Message(f"m{i}", text, i), cluster, kind)
    for i, (text, cluster, kind) in enumerate(
        [
            ("甲", "c0", "orig"),
            ("乙", "c1", "orig"),
            ("甲", "c0", "dup:exact"),
            ("丙", "c2", "orig"),
            ("乙!", "c1", "dup:punct"),
        ]
    )
]


class SeenText:
    """Flags a text seen before; remembers the batch sizes it was given."""

    name = "seen-text"

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.batches: list[int] = []

    def flags(self, batch: Sequence[Message]) -> list[bool]:
        self.batches.append(len(batch))
        out = []
        for message in batch:
            out.append(message.text in self.seen)
            self.seen.add(message.text)
        return out


class Staged(SeenText):
    name = "staged"

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def stage_seconds(self) -> dict[str, float]:
        self.calls += 1
        return {"exact": 0.5 * self.calls, "idle": 1.0}


def test_feeds_in_order_in_batches_and_scores() -> None:
    detector = SeenText()
    progress: list[tuple[int, int]] = []
    row = run(
        detector, STREAM, batch_size=2, progress=lambda done, total: progress.append((done, total))
    )
    assert detector.batches == [2, 2, 1]
    assert progress == [(2, 5), (4, 5), (5, 5)]
    assert row.method == "seen-text"
    assert (row.scores.precision, row.scores.recall) == (1.0, 0.5)
    assert row.scores.per_kind == {"exact": 1.0, "punct": 0.0}
    assert row.msgs_per_s > 0
    assert row.stage_msgs_per_s == {}


def test_stage_rates_come_from_the_seconds_spent_during_the_run() -> None:
    row = run(Staged(), STREAM)
    assert row.stage_msgs_per_s == {"exact": 5 / 0.5}  # "idle" did not move


def test_a_detector_must_answer_every_message() -> None:
    class Short(SeenText):
        def flags(self, batch: Sequence[Message]) -> list[bool]:
            return super().flags(batch)[:-1]

    with pytest.raises(ValueError, match="returned 1 flags for 2 messages"):
        run(Short(), STREAM[:2])
    with pytest.raises(ValueError, match="batch_size"):
        run(SeenText(), STREAM, batch_size=0)


def test_two_passes_bracketing_the_others_give_one_row_over_both() -> None:
    from dataclasses import replace

    from stream_dedup.tools.eval.runner import bracketed

    first = run(SeenText(), STREAM)
    fast, slow = replace(first, msgs_per_s=300.0, stage_msgs_per_s={"a": 30.0}), \
        replace(first, msgs_per_s=100.0, stage_msgs_per_s={"a": 10.0})
    both = bracketed(fast, slow)
    # N messages at 300/s and N at 100/s: 2N in N/300 + N/100 seconds.
    assert both.msgs_per_s == pytest.approx(150.0)
    assert both.stage_msgs_per_s == {"a": pytest.approx(15.0)}
    assert both.scores == first.scores and both.method == first.method
    other = run(SeenText(), STREAM[:3])
    with pytest.raises(ValueError, match="scored differently"):
        bracketed(first, other)


def test_speed_ratios_are_the_first_rows_speed_over_each_others_run_by_run() -> None:
    from dataclasses import replace

    from stream_dedup.tools.eval.runner import speed_ratios

    ours, theirs = run(SeenText(), STREAM), run(Staged(), STREAM)

    def one_run(mine: float, other: float) -> list:
        return [replace(ours, msgs_per_s=mine), replace(theirs, msgs_per_s=other)]

    ratios = speed_ratios([one_run(900.0, 100.0), one_run(800.0, 200.0), one_run(600.0, 100.0)])
    assert ratios == {"staged": [9.0, 4.0, 6.0]}
    assert "seen-text" not in ratios  # the first row is what the others are measured against
    different = [replace(ours, msgs_per_s=1.0), run(Staged(), STREAM[:3])]
    with pytest.raises(ValueError, match="staged: runs of the comparison scored differently"):
        speed_ratios([one_run(900.0, 100.0), different])
