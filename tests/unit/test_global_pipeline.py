"""The global scope's pure parts without Kafka: wire format, index shards, the decide join, and
the three together in one process against the engine in file mode; and the stateful stages'
changelog flushes retried with the stage loop's backoff (a fake producer)."""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path

import pytest
from kafka.errors import KafkaConnectionError
from test_changelog import FakeProducer, backoff
from test_restore import FakeChangelog

from stream_dedup.config import Settings, StateSettings, WindowSettings
from stream_dedup.config_file import settings_from_dict
from stream_dedup.engine.batch import Engine
from stream_dedup.engine.stored import TABLES
from stream_dedup.errors import ConfigError
from stream_dedup.records import Decision, Message
from stream_dedup.scale import restore, stages
from stream_dedup.scale.decide_stage import DecideStage
from stream_dedup.scale.index_stage import IndexStage
from stream_dedup.scale.join import Join
from stream_dedup.scale.merge import EventTimeMerge
from stream_dedup.scale.prober import Prober
from stream_dedup.scale.probes import (
    ANCHOR,
    BLOCK,
    EXACT,
    LOOKUP,
    Answer,
    Hit,
    Original,
    Probe,
    pack_answers,
    pack_original,
    pack_probes,
    partition_of,
    unpack_answers,
    unpack_original,
    unpack_probes,
)
from stream_dedup.scale.shard import Shard
from stream_dedup.state import MemoryStore

pytestmark = pytest.mark.unit
SAMPLE = Path(__file__).resolve().parents[2] / "stream_dedup" / "data" / "sample.jsonl.gz"


def _original(message_id: str, probes: int, text: str = "文本", **kw) -> Original:
    fields = {"message_id": message_id, "ts_ms": 5, "text": text, "fp": 7, "probes": probes,
              "anchors": (0, 0, 0), "topic": "in", "partition": 1, "offset": 9, "timestamp": 5,
              "key": None, "value": b"{}", "headers": ()}
    return Original(**{**fields, **kw})


def test_wire_round_trip() -> None:
    probes = [Probe(BLOCK, 3, 2**64 - 1, 12, "m1", 0, 99, "某个文本"),
              Probe(LOOKUP, 0, 5, -1, "身份", 7)]
    assert [p for r in pack_probes(probes) for p in unpack_probes(r)] == probes
    answers = [Answer("m2", 4, ANCHOR, (Hit("m1", 12, 99, -1, "某个文本"),)),
               Answer("m3", 0, EXACT, ()), Answer("m4", 2, BLOCK, (Hit("m", 1, 2, 3, ""),), True)]
    assert [a for r in pack_answers(answers) for a in unpack_answers(r)] == answers
    for o in (_original("m1", 3, headers=(("h", b"\x00v"), ("k", b""))),
              _original("m2", 0, text="", key=b"", value=None),
              _original("m3", 1, text="好评谢谢亲", clauses=(2, 4))):
        assert unpack_original(pack_original(o)) == o
    # a record packed before clause ends were carried reads as a text without them
    packed = pack_original(_original("m4", 1, clauses=(1,)))
    assert unpack_original(packed[:-4]) == _original("m4", 1)


def test_records_are_cut_under_the_size_limit() -> None:
    probes = [Probe(ANCHOR, 0, n, 1, f"m{n}", 0, 1, "字" * 3000) for n in range(200)]
    records = pack_probes(probes)
    assert len(records) > 1 and all(len(r) <= 256 * 1024 for r in records)
    assert [p for r in records for p in unpack_probes(r)] == probes


def test_lookup_anchors_meet_posted_ones() -> None:
    posted, looked = Probe(ANCHOR, 0, 42, 1, "a", 0), Probe(LOOKUP, 0, 42, 2, "b", 0)
    assert posted.shard_key == looked.shard_key
    assert partition_of(posted.shard_key, 12) == partition_of(looked.shard_key, 12)


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


def _dev_messages(path: Path, limit: int) -> list[Message]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for _, line in zip(range(limit), f, strict=False)]
    return [Message(str(r["id"]), r["text"], 1_000 + n) for n, r in enumerate(rows)]


def test_three_stages_in_one_process_decide_as_file_mode(topology, dev_stream: Path) -> None:
    """Shards and joins fed in total order decide exactly as the engine in file mode: with one
    decide partition in every rule; with several, each learns the stream's boilerplate from its
    own messages, so there the rule that reads it is off."""
    messages = _dev_messages(dev_stream, 2000)
    for s, joins in ((Settings(), 1),
                     (dataclasses.replace(Settings(), verify=dataclasses.replace(
                         Settings().verify, related_added=False)), 6)):
        engine = Engine(s, MemoryStore(TABLES))
        expected = {v.id: v for n in range(0, len(messages), 500)
                    for v in engine.process(messages[n:n + 500])}
        assert topology(messages, s, 12, joins, 500) == expected


def test_topology_topics_are_checked() -> None:
    with pytest.raises(ConfigError, match=r"topology\.answers_topic"):
        settings_from_dict({"topology": {"answers_topic": "stream-dedup-unique"}}, {})
    with pytest.raises(ConfigError, match=r"topology\.originals_topic"):
        settings_from_dict({"topology": {"originals_topic": "stream-dedup-probes"}}, {})


@dataclasses.dataclass(frozen=True)
class _Rec:
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None = None
    value: bytes | None = None
    headers: tuple = ()


def test_merge_passes_records_on_in_event_time_order() -> None:
    merge = EventTimeMerge()
    owned = {("in", 0), ("in", 1), ("in", 2)}
    p0 = [_Rec("in", 0, n, ts) for n, ts in enumerate((1, 5, 9))]
    p1 = [_Rec("in", 1, n, ts) for n, ts in enumerate((2, 3))]
    assert merge.release(p0 + p1, owned, set()) == []  # partition 2 not read yet
    got = merge.release([], owned, {("in", 2)})  # 2 is empty: the watermark is min(9, 3)
    assert [(r.partition, r.timestamp) for r in got] == [(0, 1), (1, 2), (1, 3)]
    late = _Rec("in", 1, 2, 4)
    assert [r.timestamp for r in merge.release([late], owned, {("in", 2)})] == [4]
    rest = merge.release([], owned, {("in", 1), ("in", 2)})  # only partition 0 behind
    assert [r.timestamp for r in rest] == [5, 9]


def test_merge_releases_a_prefix_per_partition_and_forgets_lost_ones() -> None:
    merge = EventTimeMerge()
    owned = {("in", 0), ("in", 1)}
    p0 = [_Rec("in", 0, n, ts) for n, ts in enumerate((1, 10, 2))]
    p1 = [_Rec("in", 1, 0, 6)]
    got = merge.release(p0 + p1, owned, set())  # watermark 6; p0's 2 waits behind its 10
    assert [(r.partition, r.offset) for r in got] == [(0, 0), (1, 0)]
    merge.own({("in", 1)})
    assert merge.release([], {("in", 1)}, {("in", 1)}) == []  # partition 0's records dropped


def test_a_verdict_durable_but_not_delivered_comes_out_when_its_batch_is_replayed() -> None:
    """The decide loop has the changelog acknowledged (4.) before it delivers (5.): a process
    killed between the two replays the batch on the restored state. A message that batch's
    answers completed (its original committed with an earlier batch) must come out again."""
    store = MemoryStore(TABLES)
    assert Join(store, Settings()).add([_original("m1", 1)], []) == []  # committed
    answer = Answer("m1", 0, EXACT, ())
    assert [d.verdict.id for d in Join(store, Settings()).add([], [answer])] == ["m1"]
    # The process dies before the verdict is delivered; the next owner restores the state.
    assert [d.verdict.id for d in Join(store, Settings()).add([], [answer])] == ["m1"]


def _index_batch(settings: Settings) -> list[_Rec]:
    """One probes record on shard 0: every probe of two messages."""
    probes = [q for p in Prober(settings).run(_dev_messages(SAMPLE, 2)) for q in p.probes]
    return [_Rec(settings.topology.probes_topic, 0, 0, 5, value=v) for v in pack_probes(probes)]


def _decide_batch(settings: Settings) -> list[_Rec]:
    """One original on join partition 0 that expects no answers (decided at once)."""
    return [_Rec(settings.topology.originals_topic, 0, 0, 5,
                 value=pack_original(_original("m1", 0)))]


@pytest.mark.parametrize("make, batch", [(IndexStage, _index_batch),
                                         (DecideStage, _decide_batch)], ids=["index", "decide"])
def test_a_stage_waits_out_a_failed_changelog_flush_with_the_loops_backoff(
        tmp_path, monkeypatch, make, batch) -> None:
    """The broker refuses the batch's first changelog record once: the stage's flush retries
    (told to the loop's `on_retry`) and re-sends it and every later record in order, instead of
    raising (which ended the stage process)."""
    producer = FakeProducer(fail=(0,), error=KafkaConnectionError("broker away"))
    monkeypatch.setattr(stages, "ensure_changelog_topics", lambda *_args: None)
    monkeypatch.setattr(stages, "changelog_producer", lambda *_args: producer)
    monkeypatch.setattr(restore, "restore", FakeChangelog(producer))
    settings = Settings(state=StateSettings(path=str(tmp_path), backend="memory"))
    stage = make(settings)
    retries: list = []
    stage.start(backoff(retries=retries))
    stage.own({(topic, 0) for topic in stage.topics})
    stage.handle(batch(settings))
    sent = len(producer.sent)
    assert sent > 0
    acknowledged = stage.flush(1.0)
    changelog_topic = settings.scale.changelog_for(f"{settings.kafka.group_id}-{make.name}",
                                                   stage.topics[0])
    assert [what for what, _ in retries] == [f"flushing changelog {changelog_topic}/0"]
    first = producer.sent[:sent]
    assert producer.sent[sent:] == first  # the refused record and all after it, in order
    # The broker took the records after the refused one, then all again: each key's last
    # record is its newest value, and the flush counts every record acknowledged.
    assert producer.log == first[1:] + first and acknowledged == len(producer.log)
    stage.close()
