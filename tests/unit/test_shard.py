"""An index shard of the global scope: it answers a probe with the earlier entries only, tells a
message answered too soon of an earlier one that came late, replays alike, and forgets entries
that left the window."""

import dataclasses

import pytest

from stream_dedup.config import Settings, WindowSettings
from stream_dedup.engine.stored import TABLES
from stream_dedup.scale.probes import ANCHOR, BLOCK, EXACT, Answer, Hit, Probe
from stream_dedup.scale.shard import Shard
from stream_dedup.state import MemoryStore

pytestmark = pytest.mark.unit


def test_a_shard_answers_only_earlier_entries_and_replays_alike() -> None:
    shard = Shard(MemoryStore(TABLES), Settings())
    later = Probe(ANCHOR, 0, 42, 20, "later", 0, 1, "later text")
    earlier = Probe(ANCHOR, 0, 42, 10, "earlier", 0, 2, "earlier text")
    first = Probe(ANCHOR, 0, 42, 5, "first", 0, 3, "first text")
    (a_first,) = shard.answer([first])
    (a_later,) = shard.answer([later])  # arrives before `earlier`, which comes before it
    a_earlier, late = shard.answer([earlier])
    assert a_first.hits == ()
    assert [h.message_id for h in a_later.hits] == ["first"]
    assert [h.message_id for h in a_earlier.hits] == ["first"]  # never the later one
    assert a_earlier.hits[0] == Hit("first", 5, 3, -1, "first text")
    # The later message, answered before `earlier` arrived, is told of it.
    assert late == Answer("later", 0, ANCHOR, (Hit("earlier", 10, 2, -1, "earlier text"),),
                          late=True)
    assert shard.answer([later, earlier]) == [a_earlier, late, a_later]  # replayed alike


def test_exact_answers_the_first_and_blocks_measure_distance() -> None:
    s = Settings()
    shard = Shard(MemoryStore(TABLES), s)
    ones = [Probe(EXACT, 0, 1, ts, f"m{ts}", 0) for ts in (1, 2, 3)]
    assert [[h.message_id for h in a.hits] for a in shard.answer(ones)] == [[], ["m1"], ["m1"]]
    far = 2 ** (s.index.candidate_distance + 1) - 1
    blocks = [Probe(BLOCK, 0, 1, 1, "a", 1, 0, "甲"), Probe(BLOCK, 0, 1, 2, "b", 1, 0b111, "乙"),
              Probe(BLOCK, 0, 1, 3, "c", 1, far, "丙")]
    hits = [[(h.message_id, h.distance) for h in a.hits] for a in shard.answer(blocks)]
    assert hits == [[], [("a", 3)], [("b", s.index.candidate_distance - 2)]]


def test_shard_entries_expire_with_the_window() -> None:
    s = dataclasses.replace(Settings(), window=WindowSettings(seconds=10.0))
    shard = Shard(MemoryStore(TABLES), s)
    shard.answer([Probe(ANCHOR, 0, 42, 1_000, "old", 0, 1, "旧")])
    (answer,) = shard.answer([Probe(ANCHOR, 0, 42, 100_000, "new", 0, 1, "新")])
    assert answer.hits == () and shard.sweeper.expired == 1
