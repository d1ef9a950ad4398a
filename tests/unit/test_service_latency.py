"""What keeps the service's latency low, on fakes: a poll waits only for the first records and
then takes what has arrived (the batch follows the load), the producer learns the output topics
before the first batch, and the run starts with the collector's and the state gauges' one-off
costs already paid."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from kafka import TopicPartition
from kafka.errors import KafkaTimeoutError
from test_kafka_service import TEXT, FakeSink, FakeSource, Rec, rec, settings

from stream_dedup.engine import Engine
from stream_dedup.kafka.retry import Backoff, Shutdown
from stream_dedup.kafka.service import Service
from stream_dedup.kafka.sink import KafkaSink
from stream_dedup.kafka.source import KafkaSource
from stream_dedup.state import MemoryStore

pytestmark = pytest.mark.unit
NO_WAIT = Backoff(0.0, 0.0, sleep=lambda _: None)


class QueueConsumer:
    """Hands out one prepared poll result per call, and remembers how long each call could
    wait and how many records it could take."""

    def __init__(self, results: list[list[Rec]]) -> None:
        self.results = results
        self.calls: list[tuple[int, int]] = []

    def subscribe(self, topics: list[str], listener: object) -> None:
        return

    def poll(self, timeout_ms: int, max_records: int) -> dict[TopicPartition, list[Rec]]:
        self.calls.append((timeout_ms, max_records))
        got = self.results.pop(0) if self.results else []
        assert len(got) <= max_records
        return {TopicPartition("in", 0): got} if got else {}


def source(results: list[list[Rec]], **kafka: object) -> tuple[KafkaSource, QueueConsumer]:
    """A real KafkaSource on a QueueConsumer that returns `results`, one per poll call."""

    class QueueSource(KafkaSource):
        def _connect(self) -> QueueConsumer:  # type: ignore[override]
            return QueueConsumer(results)

    s = QueueSource(settings(**kafka).kafka, NO_WAIT)
    return s, s.consumer  # type: ignore[return-value]


def recs(offsets: range, timestamp: int = 1_700_000_000_000) -> list[Rec]:
    return [rec(0, o, f"m{o}", TEXT, timestamp=timestamp - o) for o in offsets]


def test_a_poll_waits_for_the_first_records_only_then_takes_what_has_arrived() -> None:
    src, consumer = source([recs(range(0, 3)), recs(range(3, 5)), [], recs(range(5, 9))],
                           batch_wait_ms=40, poll_batch_size=100)
    batch = src.poll()
    assert [r.offset for r in batch] == [4, 3, 2, 1, 0]  # sorted by timestamp
    assert consumer.calls == [(40, 100), (0, 97), (0, 95)]  # waits once, never to fill
    assert len(src.poll()) == 4


def test_a_poll_stops_at_the_batch_size() -> None:
    src, consumer = source([recs(range(0, 6)), recs(range(6, 10)), recs(range(10, 12))],
                           batch_wait_ms=40, poll_batch_size=10)
    assert len(src.poll()) == 10
    assert consumer.calls == [(40, 10), (0, 4)]
    assert len(src.poll()) == 2


def test_an_idle_poll_waits_once_and_returns_nothing() -> None:
    src, consumer = source([], batch_wait_ms=25)
    assert src.poll() == []
    assert consumer.calls == [(25, 1000)]


@dataclass
class MetadataProducer:
    """A producer whose metadata requests time out `failing` times first."""

    failing: int = 0
    asked: list[str] = field(default_factory=list)

    def partitions_for(self, topic: str) -> set[int]:
        if self.failing:
            self.failing -= 1
            raise KafkaTimeoutError("metadata")
        self.asked.append(topic)
        return {0, 1}


class MetadataSink(KafkaSink):
    def _connect(self) -> MetadataProducer:  # type: ignore[override]
        return MetadataProducer(failing=1)


def test_the_sink_learns_every_topic_it_is_given_waiting_out_timeouts() -> None:
    sink = MetadataSink(settings().kafka, NO_WAIT)
    sink.prepare(["out", "dead"])
    assert sink.producer.asked == ["out", "dead"]  # type: ignore[attr-defined]


@dataclass
class PreparingSink(FakeSink):
    prepared: list[str] = field(default_factory=list)

    def prepare(self, topics: list[str]) -> None:
        self.prepared.extend(topics)


def test_check_topics_has_the_sink_learn_the_output_topics() -> None:
    s = settings()
    src = FakeSource([])
    sink = PreparingSink(src.log)
    svc = Service(s, Engine(s, MemoryStore()), src, sink, Shutdown(1.0))
    svc.check_topics()
    assert sorted(sink.prepared) == ["dead", "dups", "out"]


class StartMeter:
    """Remembers the calls the loop made, and whether the collector was frozen meanwhile."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, bool]] = []

    def _note(self, what: str) -> None:
        self.calls.append((what, gc.get_freeze_count() > 0))

    def observe_batch(self, engine: object, verdicts: object, **kw: object) -> None:
        self._note("batch")

    def set_lag(self, lags: object) -> None:
        self._note("lag")

    def count_error(self, kind: str) -> None:
        self._note(kind)

    def refresh_state(self, engine: object) -> None:
        self._note("state")


@pytest.fixture
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_the_run_freezes_what_was_loaded_and_reads_the_state_before_its_first_batch(
        unfrozen: None) -> None:
    s = settings()
    src = FakeSource([[rec(0, 0, "a", TEXT)]])
    meter = StartMeter()
    svc = Service(s, Engine(s, MemoryStore()), src, FakeSink(src.log), Shutdown(1.0), meter)
    polls = src.poll

    def poll() -> list[Rec]:
        batch = polls()
        if not batch:
            svc.shutdown.request()
        return batch

    src.poll = poll  # type: ignore[method-assign]
    svc.run()
    assert meter.calls[:2] == [("state", True), ("batch", True)]
    assert svc.stats.records == 1
