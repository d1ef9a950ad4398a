"""The global scope without Kafka: its three stages together in one process against the engine
in file mode, its topics checked, a durable verdict replayed, and the stateful stages' changelog
flushes retried with the stage loop's backoff (a fake producer). The wire format, shards, join
and merge each have the test file of their module."""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path

import pytest
from kafka.errors import KafkaConnectionError
from test_changelog import FakeProducer, backoff
from test_merge import _Rec
from test_probes import _original
from test_restore import FakeChangelog

from stream_dedup.config import Settings, StateSettings
from stream_dedup.config_file import settings_from_dict
from stream_dedup.engine.batch import Engine
from stream_dedup.engine.stored import TABLES
from stream_dedup.errors import ConfigError
from stream_dedup.records import Message
from stream_dedup.scale import restore, stages
from stream_dedup.scale.decide_stage import DecideStage
from stream_dedup.scale.index_stage import IndexStage
from stream_dedup.scale.join import Join
from stream_dedup.scale.prober import Prober
from stream_dedup.scale.probes import (
    EXACT,
    Answer,
    pack_original,
    pack_probes,
)
from stream_dedup.state import MemoryStore

pytestmark = pytest.mark.unit
SAMPLE = Path(__file__).resolve().parents[2] / "stream_dedup" / "data" / "sample.jsonl.gz"


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
