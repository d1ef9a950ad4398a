"""The verdict rules: exact and empty verdicts, the closest candidate settles (candidates tried in
Jaccard order, the first duplicate or refusal decides), anchor needs and weights, the order of
candidates before the cut."""

from dataclasses import dataclass, field

import numpy as np
import pytest

from stream_dedup.config import VerifySettings
from stream_dedup.engine import verdict
from stream_dedup.engine.verdict import Candidate, closest_verdict, exact_verdict, repeat_verdict
from stream_dedup.engine.verify import Check
from stream_dedup.records import Decision, Verdict

pytestmark = pytest.mark.unit


def test_per_message_candidates_of_one_and_of_several_rows() -> None:
    from stream_dedup.engine.verdict import per_message

    seqs = np.array([10, 11], dtype=np.uint64)
    rows = {0: [(3, 2, 4), (10, 0, 9), (4, -1, 2)], 1: [(10, 1, 0)]}
    assert per_message(rows, np.arange(2), seqs, 16) == [[(3, 2, 4), (4, -1, 2)], [(10, 1, 0)]]
    # Two rows of message 0: each candidate once with its best row, best first, own seq left out.
    rows = {0: [(3, 5, 1)], 1: [(3, 2, 4), (10, 0, 9), (4, -1, 2)], 2: [(10, 1, 0)]}
    assert per_message(rows, np.array([0, 0, 1]), seqs, 16) == [[(3, 2, 4), (4, -1, 2)],
                                                                [(10, 1, 0)]]
def candidate(name: str, jaccard: float, distance: int = 3, fp: int = 0) -> Candidate:
    """A candidate whose text is its name (the fake verification reads it back)."""
    return Candidate(name, name, fp, distance, (jaccard, "jaccard", jaccard))


@dataclass
class Table:
    """Verification by table: the check of each candidate by its text, and the texts verified,
    in order."""

    checks: dict[str, Check] = field(default_factory=dict)
    tried: list[str] = field(default_factory=list)

    def verify(self, a: str, b: str, settings: VerifySettings, *_: object) -> Check:
        self.tried.append(a)
        return self.checks[a]


@pytest.fixture
def table(monkeypatch: pytest.MonkeyPatch) -> Table:
    fake = Table()
    monkeypatch.setattr(verdict, "verify", fake.verify)
    return fake


def decide(cands: list[Candidate]) -> Verdict:
    return closest_verdict("m", "text", 0, cands, VerifySettings())


def test_candidates_are_tried_in_jaccard_order_ties_in_given_order(
        table: Table) -> None:
    table.checks.update({n: Check(False, 0.5) for n in "abcd"})
    v = decide([candidate("a", 0.2), candidate("b", 0.9), candidate("c", 0.5),
                candidate("d", 0.9)])
    assert table.tried == ["b", "d", "c", "a"]
    assert v.decision is Decision.UNIQUE and v.reason == "unique" and v.matched_id is None


def test_the_first_duplicate_settles(table: Table) -> None:
    table.checks.update(a=Check(True, 0.7), b=Check(False, 0.9, apart="passage"),
                        c=Check(True, 0.6))
    v = decide([candidate("c", 0.6), candidate("a", 0.7), candidate("b", 0.9)])
    assert table.tried == ["b", "a"]
    assert (v.decision, v.matched_id, v.similarity, v.distance) == (Decision.NEAR, "a", 0.7, 3)


def test_a_refusal_settles_before_a_less_similar_duplicate(table: Table) -> None:
    table.checks.update(a=Check(False, 0.8, guard="date"), b=Check(True, 0.7))
    v = decide([candidate("b", 0.7), candidate("a", 0.8)])
    assert table.tried == ["a"]
    assert (v.decision, v.matched_id, v.guard) == (Decision.UNIQUE, "a", "date")
    assert v.reason == "related: date"


def test_set_apart_and_too_short_do_not_settle(table: Table) -> None:
    table.checks.update(a=Check(False, 0.9, guard="short"), b=Check(False, 0.8, apart="passage"),
                  c=Check(False, 0.7, apart="passage"))
    v = decide([candidate("a", 0.9), candidate("b", 0.8), candidate("c", 0.7)])
    assert table.tried == ["a", "b", "c"]
    assert (v.decision, v.matched_id, v.guard) == (Decision.UNIQUE, "b", "passage")
    table.checks.update(b=Check(False, 0.8), c=Check(False, 0.7))
    assert decide([candidate("a", 0.9), candidate("b", 0.8)]).reason == (
        "unique: too little content for a near match")


def test_a_candidate_found_by_anchors_alone_gets_its_simhash_distance(
        table: Table) -> None:
    table.checks.update(a=Check(True, 0.9))
    v = closest_verdict("m", "text", 0b1011, [candidate("a", 0.9, distance=-1, fp=0b0110)],
                        VerifySettings())
    assert v.distance == 3


def test_exact_and_empty_verdicts() -> None:
    v = exact_verdict("m2", "m1")
    assert (v.decision, v.matched_id, v.distance, v.similarity) == (Decision.EXACT, "m1", 0, 1.0)
    assert verdict.empty_verdict("m3").decision is Decision.UNIQUE and verdict.empty_verdict("m3").reason == (
        "unique: no text content")


def test_a_repeat_is_exact_unless_the_same_words_are_a_question_and_a_statement() -> None:
    related = repeat_verdict("m2", "m1", "系呀", ("?", "."), VerifySettings())
    assert (related.decision, related.reason, related.matched_id) == (
        Decision.UNIQUE, "related: question", "m1")
    assert repeat_verdict("m2", "m1", "系呀", ("?", "?"), VerifySettings()) == exact_verdict(
        "m2", "m1")
    assert repeat_verdict("m2", "m1", "系呀", ("?", "."), VerifySettings(
        related_question=False)) == exact_verdict("m2", "m1")


def test_source_seq_is_that_of_the_matched_candidate_of_a_near_verdict() -> None:
    cands = [candidate("a", 0.9), candidate("b", 0.8)]
    related = Verdict("m", Decision.UNIQUE, "related: date", matched_id="b", guard="date")
    assert verdict.source_seq(related, cands, [4, 7]) is None  # unique: no source
    assert verdict.source_seq(exact_verdict("m", "b"), cands, [4, 7]) is None
    assert verdict.source_seq(Verdict("m", Decision.NEAR, "near", matched_id="b"), cands, [4, 7]) == 7


def test_anchor_need_is_a_fifth_capped_by_half_the_posted_one_deletion_key_enough() -> None:
    need = verdict.anchor_need([[10, 3, 4], [0, 0, 0]], stored=0)
    big = np.iinfo(np.int64).max
    assert need.tolist() == [[2, 1, 1], [big, big, big]]  # a family the message lacks: none
    assert verdict.anchor_need([[40, 40, 2]], stored=6).tolist() == [[3, 3, 1]]


def test_anchor_weights_fall_with_the_posters_and_rank_key_orders_best_first() -> None:
    weights = verdict.anchor_weights(8)
    assert weights.tolist()[:3] == [1000, 1000, 500] and weights[8] == 250
    assert all(np.diff(weights) <= 0)
    cands = [(1, 5, 100), (2, -1, 300), (3, 2, 100), (4, 9, 300)]
    assert [c[0] for c in sorted(cands, key=verdict.rank_key)] == [4, 2, 3, 1]
