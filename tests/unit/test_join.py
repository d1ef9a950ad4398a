"""The decide join of the global scope: a message is decided once every answer is in, replayed
answers count once, late answers are taken without being counted, and a replay gets the first
verdict again."""

import dataclasses

import pytest
from test_probes import _original

from stream_dedup.config import Settings
from stream_dedup.engine.stored import TABLES
from stream_dedup.records import Decision
from stream_dedup.scale.join import Join
from stream_dedup.scale.probes import BLOCK, EXACT, Answer, Hit
from stream_dedup.state import MemoryStore

pytestmark = pytest.mark.unit


def test_join_waits_for_every_answer_counts_replays_once_and_remembers() -> None:
    join = Join(MemoryStore(TABLES), Settings())
    exact = Answer("m2", 0, EXACT, (Hit("m1", 1, 0, -1, ""),))
    none = Answer("m2", 1, BLOCK, ())
    assert join.add([], [exact]) == []  # answers before the original
    assert join.add([_original("m2", 2)], [exact]) == []  # the same answer again counts once
    (done,) = join.add([], [none])
    assert done.verdict.decision is Decision.EXACT and done.verdict.matched_id == "m1"
    late = Answer("m2", 0, EXACT, (Hit("m0", 0, 0, -1, ""),), late=True)
    assert join.add([], [late]) == []  # late answers of a decided message are dropped
    # A replayed batch: its own answer, or its original, routes the first verdict again, once.
    for batch in (([], [none, none]), ([_original("m2", 2)], [none])):
        (again,) = join.add(*batch)
        assert again.verdict == dataclasses.replace(done.verdict, replayed=True)
        assert again.original == _original("m2", 2)


def test_join_takes_late_answers_without_counting_them() -> None:
    join = Join(MemoryStore(TABLES), Settings())
    late = Answer("m3", 0, EXACT, (Hit("m1", 1, 0, -1, ""),), late=True)
    own = Answer("m3", 0, EXACT, (Hit("m2", 2, 0, -1, ""),))
    assert join.add([_original("m3", 1)], [late, late]) == []  # not one of its own answers
    (done,) = join.add([], [own])
    assert done.verdict.matched_id == "m1"  # the first message with the text, however late
