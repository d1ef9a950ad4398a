"""The closest candidate settles, whatever order the index found the candidates in: candidates
are tried by Jaccard, the first duplicate or refusal decides, else the first set apart, else
"too short", else unique."""

import random
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_dedup.config import VerifySettings
from stream_dedup.engine import verdict
from stream_dedup.engine.verdict import Candidate, closest_verdict
from stream_dedup.engine.verify import Check
from stream_dedup.records import Decision

pytestmark = pytest.mark.property
OUTCOMES = {"duplicate": Check(True, 0.9), "refused": Check(False, 0.8, guard="date"),
            "short": Check(False, 0.7, guard="short"), "apart": Check(False, 0.7, apart="passage"),
            "different": Check(False, 0.1)}


def expected(found: list[tuple[float, str]]) -> tuple[Decision, str | None, str]:
    """(decision, matched id, reason's first word) by the rule, candidates named by position."""
    ranked = sorted(enumerate(found), key=lambda c: -c[1][0])
    apart = None
    for n, (_, outcome) in ranked:
        if outcome == "duplicate":
            return Decision.NEAR, f"c{n}", "near:"
        if outcome == "refused":
            return Decision.UNIQUE, f"c{n}", "related:"
        if outcome == "apart" and apart is None:
            apart = f"c{n}"
    if apart is not None:
        return Decision.UNIQUE, apart, "related:"
    if any(outcome == "short" for _, outcome in found):
        return Decision.UNIQUE, None, "unique:"
    return Decision.UNIQUE, None, "unique"


@settings(max_examples=300, deadline=None)
@given(found=st.lists(st.tuples(st.floats(0, 1), st.sampled_from(sorted(OUTCOMES))),
                      max_size=8, unique_by=lambda c: c[0]),
       order=st.randoms(use_true_random=False))
def test_the_closest_candidate_settles_in_any_order(found: list[tuple[float, str]],
                                                     order: random.Random) -> None:
    candidates = [Candidate(f"c{n}", outcome, 0, 1, (j, "jaccard", j))
                  for n, (j, outcome) in enumerate(found)]
    order.shuffle(candidates)
    with mock.patch.object(verdict, "verify", lambda a, b, *_: OUTCOMES[a]):
        got = closest_verdict("m", "text", 0, candidates, VerifySettings())
    decision, matched, reason = expected(found)
    assert (got.decision, got.matched_id, got.reason.split()[0]) == (decision, matched, reason)
