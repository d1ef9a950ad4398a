"""The service loop with fakes at both edges and the real engine (memory state): routing,
headers, the order deliver -> commit, replay after a crash, and shutdown while the broker is
away. The real broker is in tests/integration."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pytest

from stream_dedup.config import KafkaSettings, Settings
from stream_dedup.config_file import settings_from_dict
from stream_dedup.engine.batch import Engine
from stream_dedup.engine.stored import TABLES
from stream_dedup.errors import ConfigError
from stream_dedup.kafka.headers import as_dict
from stream_dedup.kafka.retry import GaveUp, Shutdown
from stream_dedup.kafka.route import Output
from stream_dedup.ops.recent import RecentVerdicts
from stream_dedup.records import Verdict
from stream_dedup.runtime.service import Service
from stream_dedup.state import MemoryStore

pytestmark = pytest.mark.unit
TEXT = "今天的天气真的非常好我们去公园散步吧"


@dataclass(frozen=True)
class Rec:
    topic: str
    partition: int
    offset: int
    value: bytes | None
    key: bytes | None = None
    headers: Sequence[tuple[str, bytes]] = ()
    timestamp: int = 1_700_000_000_000


def rec(partition: int, offset: int, ident: str, text: str, **kw) -> Rec:
    value = json.dumps({"id": ident, "text": text}, ensure_ascii=False).encode()
    return Rec("in", partition, offset, value, key=ident.encode(), **kw)


@dataclass
class FakeSource:
    batches: list[list[Rec]]
    log: list[str] = field(default_factory=list)
    committed: dict[tuple[str, int], int] = field(default_factory=dict)
    waits: list[bool] = field(default_factory=list)

    def poll(self, wait: bool = True) -> list[Rec]:
        self.waits.append(wait)
        return self.batches.pop(0) if self.batches else []

    def commit(self, offsets: dict[tuple[str, int], int]) -> bool:
        self.log.append("commit")
        self.committed.update(offsets)
        return True

    def lags(self) -> dict[tuple[str, int], int]:
        return {}

    def topics(self) -> set[str]:
        return {"in", "out", "dups", "dead"}

    def before_revoke(self, settle: Callable[[], None]) -> None:
        self.settle = settle

    def close(self) -> None:
        self.log.append("close source")


@dataclass
class FakeSink:
    """Keeps what was sent; `complete` ("deliver" in the log) fails with `fail` when set."""

    log: list[str]
    fail: BaseException | None = None
    outputs: list[Output] = field(default_factory=list)

    def send(self, outputs: Sequence[Output]) -> list[Output]:
        self.outputs.extend(outputs)
        return list(outputs)

    def complete(self, sent: list[Output]) -> None:
        if self.fail is not None:
            raise self.fail
        self.log.append("deliver")

    def idle(self) -> None:
        return

    def close(self) -> None:
        self.log.append("close sink")


def settings(**kafka) -> Settings:
    names = {"input_topics": ("in",), "output_topic": "out", "duplicates_topic": "dups",
             "dead_letter_topic": "dead"}
    k = KafkaSettings(**{**names, **kafka})
    return Settings(kafka=k)


def service(batches: list[list[Rec]], store: MemoryStore | None = None,
            recent: RecentVerdicts | None = None, **kafka
            ) -> tuple[Service, FakeSource, FakeSink]:
    s = settings(**kafka)
    source = FakeSource(batches)
    sink = FakeSink(source.log)
    engine = Engine(s, store or MemoryStore(TABLES))
    return Service(s, engine, source, sink, Shutdown(1.0), recent=recent), source, sink


def test_routes_by_verdict_with_headers_and_commits_after_delivery() -> None:
    batch = [rec(0, 10, "a", TEXT, headers=[("trace", b"1"), ("dedup.verdict", b"old")]),
             rec(3, 7, "b", TEXT + "！"),
             Rec("in", 3, 8, b"\xff\xfe"),
             rec(0, 11, "c", "完全不同的另一条消息内容在这里出现")]
    svc, source, sink = service([batch])
    assert svc.step() == 4
    assert source.log == []  # in flight: sent, acknowledged and committed with the next poll
    assert svc.step() == 0
    assert source.log == ["deliver", "commit"]
    assert source.committed == {("in", 0): 12, ("in", 3): 9}
    by_topic = {o.topic: [] for o in sink.outputs}
    for o in sink.outputs:
        by_topic[o.topic].append(o)
    assert [o.key for o in by_topic["out"]] == [b"a", b"c"]
    first = by_topic["out"][0]
    assert first.value == batch[0].value and first.timestamp_ms == batch[0].timestamp
    h = as_dict(first.headers)
    assert h["trace"] == "1" and h["dedup.verdict"] == "unique"
    assert [k for k, _ in first.headers].count("dedup.verdict") == 1
    dup = as_dict(by_topic["dups"][0].headers)
    assert dup["dedup.verdict"] == "exact" and dup["dedup.matched_id"] == "a"
    assert dup["dedup.distance"] == "0"
    dead = as_dict(by_topic["dead"][0].headers)
    assert dead["dedup.error"].startswith("not UTF-8")
    assert (dead["dedup.source.topic"], dead["dedup.source.partition"],
            dead["dedup.source.offset"]) == ("in", "3", "8")


def test_the_inspector_ring_gets_acknowledged_verdicts_with_texts_and_candidates() -> None:
    ring = RecentVerdicts(100, unique_every=1)
    near = TEXT.replace("非常", "特别")
    svc, _, _ = service([[rec(0, 0, "a", TEXT), rec(0, 1, "b", near), Rec("in", 0, 2, b"\xff")]],
                        recent=ring)
    svc.step()
    assert ring.seen() == []  # sent, not yet acknowledged
    svc.step()
    seen = {s.verdict.id: s for s in ring.seen()}
    assert set(seen) == {"a", "b"} and ring.total == 2  # the dead letter is no verdict
    assert seen["b"].text == near and ring.text("a") == TEXT
    assert seen["b"].time_ms is not None
    assert ring.candidates("b") == ("a",)


def test_duplicates_topic_off_drops_duplicates() -> None:
    svc, _, sink = service([[rec(0, 0, "a", TEXT), rec(0, 1, "b", TEXT)]],
                           duplicates_topic=None)
    svc.step()
    svc.complete()
    assert [o.kind for o in sink.outputs] == ["unique"]
    assert svc.stats.duplicates == 1


def test_a_replayed_batch_gets_its_first_verdicts_again() -> None:
    store = MemoryStore(TABLES)
    batch = [rec(0, 0, "a", TEXT), rec(1, 0, "b", TEXT)]
    first, _, sink1 = service([list(batch)], store)
    first.step()  # crashed after deciding and sending, before committing: replayed
    again, _, sink2 = service([list(batch)], store)
    again.step()
    again.complete()
    assert [(o.topic, o.value) for o in sink2.outputs] == [(o.topic, o.value)
                                                           for o in sink1.outputs]
    assert all(as_dict(o.headers)["dedup.replayed"] == "true" for o in sink2.outputs)
    assert as_dict(sink2.outputs[0].headers)["dedup.verdict"] == "unique"
    assert again.stats.replayed == 2


def test_shutdown_while_the_broker_is_away_commits_nothing_and_closes_all() -> None:
    svc, source, sink = service([[rec(0, 0, "a", TEXT)]])
    sink.fail = GaveUp("delivering 1 outputs")
    svc.shutdown.request()
    svc.shutdown._deadline = 0.0  # the shutdown time has run out
    assert svc.step() == 1
    with pytest.raises(GaveUp):
        svc.complete()
    assert "commit" not in source.log
    svc.run()  # stopping: closes at once
    assert source.log[-2:] == ["close source", "close sink"]


def test_a_batch_is_acknowledged_and_committed_while_the_next_one_is_decided() -> None:
    svc, source, sink = service([[rec(0, 0, "a", TEXT)], [rec(0, 1, "b", "完全不同的另一条消息")],
                                 [rec(1, 0, "c", TEXT)]])
    assert svc.step() == 1 and source.log == [] and len(sink.outputs) == 1
    assert svc.step() == 1  # the second batch is sent, then the first one completed
    assert source.log == ["deliver", "commit"] and source.committed == {("in", 0): 1}
    assert len(sink.outputs) == 2 and svc.stats.records == 1
    source.settle()  # partitions about to be revoked: the batch in flight is settled first
    assert source.committed == {("in", 0): 2} and svc.stats.records == 2
    source.settle()  # nothing in flight: nothing to do
    assert source.log == ["deliver", "commit"] * 2
    svc.step()
    svc.shutdown.request()
    svc.run()  # stopping completes the batch in flight before closing
    assert source.log[-4:] == ["deliver", "commit", "close source", "close sink"]
    assert source.committed == {("in", 0): 2, ("in", 1): 1} and svc.stats.records == 3


class Pipelined:
    """A pipelined engine (as `EngineProcess`) over an in-process one: `submit` only keeps the
    batch; `result` decides it. Logs both."""

    pipelined = True

    def __init__(self, engine: Engine, log: list[str]) -> None:
        self.engine, self.log, self.batch = engine, log, None

    def prepare(self, messages) -> list:
        self.log.append("prepare")
        return list(messages)

    def submit(self, prepared: list) -> None:
        assert self.batch is None, "a batch submitted while one is being decided"
        self.log.append("submit")
        self.batch = prepared

    def result(self) -> list[Verdict]:
        self.log.append("result")
        batch, self.batch = self.batch, None
        return self.engine.process(batch)

    def close(self) -> None:
        self.engine.close()


def test_a_pipelined_engine_decides_a_batch_while_the_one_before_is_delivered() -> None:
    batches = [[rec(0, 0, "a", TEXT), rec(0, 1, "b", TEXT + "！")],
               [rec(1, 0, "c", "完全不同的另一条消息内容在这里出现"), rec(1, 1, "d", TEXT)],
               [rec(0, 2, "e", TEXT)]]
    inline, _, inline_sink = service([list(b) for b in batches])
    while inline.step():
        pass
    s = settings()
    source = FakeSource([list(b) for b in batches])
    sink = FakeSink(source.log)
    svc = Service(s, Pipelined(Engine(s, MemoryStore(TABLES)), source.log), source, sink,
                  Shutdown(1.0))
    assert svc.step() == 2 and source.log == ["prepare", "submit"] and sink.outputs == []
    assert svc.step() == 2  # the second prepared while the first is decided, the first's
    # verdicts taken, the second handed over, the first sent
    assert source.log == ["prepare", "submit", "prepare", "result", "submit"]
    assert len(sink.outputs) == 2
    assert svc.step() == 1  # the second sent, the first completed
    assert source.log[5:] == ["prepare", "result", "submit", "deliver", "commit"]
    assert svc.step() == 0  # nothing arrived while the third was decided: it is sent now
    assert source.log[10:] == ["result", "deliver", "commit"]
    assert source.waits == [True, False, False, False]  # no waiting while a batch is decided
    assert source.committed == {("in", 0): 2, ("in", 1): 2} and len(sink.outputs) == 5
    source.settle()  # a revoke: the batch in flight completed
    assert source.committed == {("in", 0): 3, ("in", 1): 2} and svc.stats.records == 5
    assert [(o.topic, o.value, o.headers) for o in sink.outputs] == \
        [(o.topic, o.value, o.headers) for o in inline_sink.outputs]


def test_settling_takes_the_batch_being_decided_through_delivery_first() -> None:
    s = settings()
    source = FakeSource([[rec(0, 0, "a", TEXT)]])
    sink = FakeSink(source.log)
    svc = Service(s, Pipelined(Engine(s, MemoryStore(TABLES)), source.log), source, sink,
                  Shutdown(1.0))
    assert svc.step() == 1 and source.log == ["prepare", "submit"]
    source.settle()  # partitions about to be revoked
    assert source.log == ["prepare", "submit", "result", "deliver", "commit"]
    assert source.committed == {("in", 0): 1} and len(sink.outputs) == 1


def test_check_topics_names_the_missing_topic() -> None:
    svc, source, _ = service([])
    source.topics = lambda: {"in", "out"}  # type: ignore[method-assign]
    with pytest.raises(Exception, match="dead, dups do not exist"):
        svc.check_topics()


@pytest.mark.parametrize(
    ("kafka", "key"),
    [
        ({"output_topic": "stream-dedup-input"}, "kafka.output_topic"),
        ({"duplicates_topic": "stream-dedup-unique"}, "kafka.dead_letter_topic"),
        ({"input_topics": []}, "kafka.input_topics"),
        ({"input_topics": "one"}, "kafka.input_topics"),
        ({"poll_batch_size": 0}, "kafka.poll_batch_size"),
        ({"fetch_min_bytes": 0}, "kafka.fetch_min_bytes"),
        ({"session_timeout_ms": 400000}, "kafka.session_timeout_ms"),
        ({"retry_backoff_max_s": 0.1}, "kafka.retry_backoff_max_s"),
        ({"connect_timeout_s": 0}, "kafka.connect_timeout_s"),
        ({"brokers": "x"}, "kafka.brokers"),
    ],
)
def test_bad_kafka_config_names_the_key(kafka: dict, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        settings_from_dict({"kafka": kafka}, environ={})
    assert err.value.key == key


def test_kafka_settings_from_the_environment() -> None:
    s = settings_from_dict({}, environ={"STREAM_DEDUP__KAFKA__INPUT_TOPICS": "[a, b]",
                                        "STREAM_DEDUP__KAFKA__DUPLICATES_TOPIC": "null"})
    assert s.kafka.input_topics == ("a", "b") and s.kafka.duplicates_topic is None
    assert s.kafka.connect_timeout_s is None
    timed = settings_from_dict({"kafka": {"connect_timeout_s": 30}}, environ={})
    assert timed.kafka.connect_timeout_s == 30


def test_the_gil_switch_interval_follows_the_batch_size() -> None:
    """A thin input (small batches) lets kafka-python's threads in often, for latency; a backlog
    (large batches) lets the engine run longer between switches, for throughput."""
    from stream_dedup.runtime import service as service_module

    small = [rec(0, i, f"s{i}", f"{TEXT}{i}") for i in range(3)]
    large = [rec(1, i, f"l{i}", f"{TEXT}{i}") for i in range(service_module.BACKLOG_RECORDS)]
    before = sys.getswitchinterval()
    try:
        svc, _, _ = service([large, small])
        svc.step()
        assert sys.getswitchinterval() == pytest.approx(service_module.BACKLOG_SWITCH_S)
        svc.step()
        assert sys.getswitchinterval() == pytest.approx(service_module.LATENCY_SWITCH_S)
    finally:
        sys.setswitchinterval(before)


def test_the_collector_is_paused_during_each_step_only() -> None:
    """A step's records, outputs and futures are not re-examined by the cyclic collector while
    the step holds them; between steps it runs as usual."""
    import gc

    batch = [rec(0, i, f"g{i}", f"{TEXT}{i}") for i in range(3)]
    svc, source, _ = service([batch, []])
    seen: list[bool] = []
    poll = source.poll

    def noting(wait: bool = True) -> list[Rec]:
        seen.append(gc.isenabled())
        if not source.batches:
            svc.shutdown.request()
        return poll(wait)

    source.poll = noting  # type: ignore[method-assign]
    svc.run()
    assert len(seen) >= 2 and not any(seen) and gc.isenabled()
