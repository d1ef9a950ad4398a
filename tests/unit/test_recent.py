"""The inspector's ring of recent verdicts: what it keeps, and that it stays bounded."""

import pytest

from stream_dedup.ops.recent import RecentVerdicts, fill
from stream_dedup.records import Decision, Verdict

pytestmark = pytest.mark.unit


def _unique(i: int) -> Verdict:
    return Verdict(f"u{i}", Decision.UNIQUE, "unique")


def _near(i: int) -> Verdict:
    return Verdict(f"n{i}", Decision.NEAR, "near: jaccard", f"u{i}", 2, 0.8)


def _related(i: int) -> Verdict:
    return Verdict(f"r{i}", Decision.UNIQUE, "related: number", f"u{i}", 3, 0.7, "number")


def test_keeps_every_duplicate_and_related_and_a_sample_of_uniques() -> None:
    ring = RecentVerdicts(100, unique_every=10)
    verdicts = [_unique(i) for i in range(30)] + [_near(1), _related(2)]
    ring.add(verdicts, [v.id for v in verdicts], [1000] * len(verdicts))
    kinds = [s.kind for s in ring.seen()]
    assert kinds[:2] == ["related", "near"]  # newest first
    assert kinds.count("unique") == 3  # the 1st, 11th and 21st unique
    assert ring.total == 32


def test_texts_of_messages_not_kept_are_found_for_their_pairs() -> None:
    ring = RecentVerdicts(10, unique_every=1000)
    ring.add([_unique(1), _near(1)], ["今天股市上涨", "今天股市上涨了"], [1, 2])
    near = ring.find("n1")
    assert near is not None and ring.text(near.verdict.matched_id) == "今天股市上涨"


def test_oldest_go_first() -> None:
    ring = RecentVerdicts(3)
    for i in range(5):
        ring.add([_near(i)], [str(i)], [i])
    assert [s.verdict.id for s in ring.seen()] == ["n4", "n3", "n2"]
    assert ring.find("n0") is None and ring.text("n0") is None


def test_candidates_kept_per_message_and_bounded() -> None:
    ring = RecentVerdicts(2)
    for i in range(4):
        ring.candidates_tried(f"m{i}", [f"c{i}", "c"])
    assert ring.candidates("m3") == ("c3", "c") and ring.candidates("m0") is None


def test_a_million_verdicts_leave_the_ring_at_its_size() -> None:
    size = 1000
    ring = RecentVerdicts(size, unique_every=20)
    verdicts = [v for i in range(250_000) for v in (_unique(i), _near(i), _related(i), _unique(-i))]

    def rows():
        for n, v in enumerate(verdicts):
            ring.candidates_tried(v.id, ["x"])
            yield v, f"text {n}", n

    fill(ring, rows(), chunk=5000)
    assert ring.total == 1_000_000
    assert ring.held() == (size, size, size)
    # The last message, the 500,000th plain unique, is outside the 1-in-20 sample.
    assert ring.seen()[0].verdict.id == "r249999"


def test_size_must_be_positive() -> None:
    with pytest.raises(ValueError):
        RecentVerdicts(0)
