"""What keeps the service's latency low, on fakes: a poll waits only for the first records and
then takes what has arrived (the batch follows the load; a backlog fills it), commits are sent without waiting for
the answer (and still carry only acknowledged work), the producer learns the output topics
before the first batch, and the run starts with the collector's and the state gauges' one-off
costs already paid."""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException
from kafka import TopicPartition
from kafka.errors import (
    CommitFailedError,
    GroupAuthorizationFailedError,
    NotCoordinatorError,
)
from test_metrics_service import Errors
from test_runtime_service import TEXT, FakeSink, FakeSource, Rec, rec, settings

from stream_dedup.engine.batch import Engine
from stream_dedup.engine.stored import TABLES
from stream_dedup.errors import ServiceError
from stream_dedup.kafka.reporting import CONDITIONS
from stream_dedup.kafka.retry import Backoff, Shutdown
from stream_dedup.kafka.sink import KafkaSink
from stream_dedup.kafka.source import BACKLOG_RECORDS, KafkaSource
from stream_dedup.ops.health import Readiness
from stream_dedup.runtime.service import Service
from stream_dedup.state import MemoryStore

pytestmark = pytest.mark.unit
NO_WAIT = Backoff(0.0, 0.0, sleep=lambda _: None)


class QueueConsumer:
    """Hands out one prepared poll result per call, and remembers how long each call could
    wait and how many records it could take."""

    def __init__(self, results: list[list[Rec]],
                 high: int | dict[int, int] | None = None) -> None:
        self.results = results
        self.high = high  # the high watermark the fetches report (None: not known)
        self.calls: list[tuple[int, int]] = []

    def subscribe(self, topics: list[str], listener: object) -> None:
        return

    def poll(self, timeout_ms: int, max_records: int) -> dict[TopicPartition, list[Rec]]:
        self.calls.append((timeout_ms, max_records))
        got = self.results.pop(0) if self.results else []
        if len(got) > max_records:  # the rest waits for the next poll, as in kafka-python
            got, rest = got[:max_records], got[max_records:]
            self.results.insert(0, rest)
        by_partition: dict[TopicPartition, list[Rec]] = {}
        for r in got:
            by_partition.setdefault(TopicPartition(r.topic, r.partition), []).append(r)
        return by_partition

    def highwater(self, tp: TopicPartition) -> int | None:
        return self.high.get(tp.partition) if isinstance(self.high, dict) else self.high


def source(results: list[list[Rec]], high: int | dict[int, int] | None = None,
           **kafka: object) -> tuple[KafkaSource, QueueConsumer]:
    """A real KafkaSource on a QueueConsumer that returns `results`, one per poll call."""

    class QueueSource(KafkaSource):
        def _connect(self) -> QueueConsumer:  # type: ignore[override]
            return QueueConsumer(results, high)

    s = QueueSource(settings(**kafka).kafka, NO_WAIT)
    return s, s.consumer  # type: ignore[return-value]


def recs(offsets: range, timestamp: int = 1_700_000_000_000) -> list[Rec]:
    return [rec(0, o, f"m{o}", TEXT, timestamp=timestamp - o) for o in offsets]


def test_a_poll_waits_for_the_first_records_only_then_takes_what_has_arrived() -> None:
    src, consumer = source([recs(range(0, 3)), recs(range(3, 5)), [], recs(range(5, 9))],
                           batch_wait_ms=40, poll_batch_size=100)
    batch = src.poll()
    assert [r.offset for r in batch] == [2, 1, 0]  # sorted by timestamp
    assert consumer.calls == [(40, 100)]  # waits once, never to fill: one consumer poll
    assert [r.offset for r in src.poll()] == [4, 3]
    assert src.poll() == []
    assert len(src.poll()) == 4


def test_a_poll_stops_at_the_batch_size() -> None:
    src, consumer = source([recs(range(0, 6)), recs(range(6, 10)), recs(range(10, 12))],
                           high=12 + BACKLOG_RECORDS, batch_wait_ms=40, poll_batch_size=10)
    assert len(src.poll()) == 10
    assert consumer.calls == [(40, 10), (40, 4)]
    assert len(src.poll()) == 2


def test_a_backlog_fills_the_batch_from_the_next_fetches() -> None:
    # Once a batch holds BACKLOG_RECORDS, each further poll waits for the next fetch's answer;
    # below that it takes only what has arrived (the two tests above).
    big = BACKLOG_RECORDS
    src, consumer = source([recs(range(0, big)), recs(range(big, big + 300)), [],
                            recs(range(big + 300, big + 310))],
                           batch_wait_ms=40, poll_batch_size=big + 500)
    assert len(src.poll()) == big + 300
    assert consumer.calls == [(40, big + 500), (40, 500), (40, 200)]
    assert len(src.poll()) == 10


def test_a_backlog_on_any_owned_partition_fills_the_batch() -> None:
    # A poll that reached the end of one partition while another is far behind is a backlog
    # still: the records behind the last polled of every owned partition count.
    first = [rec(0, o, f"a{o}", TEXT) for o in range(5)]
    tail = [rec(1, o, f"b{o}", TEXT) for o in range(5)]
    more = [rec(0, o, f"a{o}", TEXT) for o in range(5, 10)]
    src, consumer = source([first, tail, more], high={0: 5 + BACKLOG_RECORDS, 1: 5},
                           batch_wait_ms=40, poll_batch_size=5000)
    # Partition 1's end (nothing behind it) does not stop the batch: partition 0 has 1,000
    # records behind its last polled one; after the third poll 995, which is no backlog.
    assert len(src.poll()) == 15
    assert consumer.calls == [(40, 5000), (40, 4995), (40, 4990)]


def test_a_backlog_waits_once_more_for_a_late_fetch() -> None:
    # A fetch that did not answer within one wait does not end a backlog's batch; two do.
    big = BACKLOG_RECORDS
    src, consumer = source([recs(range(0, 10)), [], recs(range(10, 20)), [], [],
                            recs(range(20, 30))],
                           high=30 + big, batch_wait_ms=40, poll_batch_size=5000)
    assert len(src.poll()) == 20  # the second empty poll ends it
    assert consumer.calls == [(40, 5000), (40, 4990), (40, 4990), (40, 4980)]
    src, consumer = source([recs(range(0, 10)), [], recs(range(10, 20))], high=10 + big - 1,
                           batch_wait_ms=40, poll_batch_size=5000)
    assert len(src.poll()) == 10  # no backlog: the first empty poll ends it
    assert consumer.calls == [(40, 5000)]


def test_records_waiting_in_the_topic_make_a_backlog_too() -> None:
    # A small first poll with BACKLOG_RECORDS more behind it in the partition (by the fetch's
    # high watermark) waits for the next fetch; without them it takes only what has arrived.
    behind = recs(range(0, 10)), recs(range(10, 20)), [], recs(range(20, 30))
    src, consumer = source(list(behind), high=20 + BACKLOG_RECORDS, batch_wait_ms=40,
                           poll_batch_size=5000)
    assert len(src.poll()) == 30  # the fetch that came late is waited for once
    assert consumer.calls == [(40, 5000), (40, 4990), (40, 4980), (40, 4980)]
    src, consumer = source(list(behind), high=10 + BACKLOG_RECORDS - 1, batch_wait_ms=40,
                           poll_batch_size=5000)
    assert len(src.poll()) == 10
    assert consumer.calls == [(40, 5000)]


def test_an_idle_poll_waits_once_and_returns_nothing() -> None:
    src, consumer = source([], batch_wait_ms=25, poll_batch_size=1000)
    assert src.poll() == []
    assert consumer.calls == [(25, 1000)]


def test_a_poll_told_not_to_wait_takes_only_what_has_arrived() -> None:
    # The service's poll while a pipelined engine decides the batch before: a backlog still
    # fills the batch from the next fetches.
    src, consumer = source([], batch_wait_ms=25, poll_batch_size=1000)
    assert src.poll(wait=False) == []
    assert consumer.calls == [(0, 1000)]
    big = BACKLOG_RECORDS
    src, consumer = source([recs(range(0, big)), recs(range(big, big + 5)), []],
                           batch_wait_ms=25, poll_batch_size=big + 100)
    assert len(src.poll(wait=False)) == big + 5
    assert consumer.calls == [(0, big + 100), (25, 100), (25, 95)]


class CommitConsumer:
    """Keeps the commits it was sent; `answer` completes the oldest unanswered async one."""

    def __init__(self) -> None:
        self.listener = None
        self.owned = {TopicPartition("in", p) for p in range(3)}
        self.sent: list[dict[int, int]] = []  # async commits, partition -> offset
        self.waiting: list[tuple[dict, object]] = []
        self.synced: list[dict[int, int]] = []
        self.sync_error: Exception | None = None
        self.closed = False

    def subscribe(self, topics: list[str], listener: object) -> None:
        self.listener = listener

    def assignment(self) -> set[TopicPartition]:
        return set(self.owned)

    def commit_async(self, offsets: dict, callback: object) -> None:
        self.sent.append({tp.partition: o.offset for tp, o in offsets.items()})
        self.waiting.append((offsets, callback))

    def answer(self, result: object) -> None:
        offsets, callback = self.waiting.pop(0)
        callback(offsets, result)  # type: ignore[operator]

    def commit(self, offsets: dict, timeout_ms: int) -> None:
        if self.sync_error is not None:
            raise self.sync_error
        self.synced.append({tp.partition: o.offset for tp, o in offsets.items()})

    def close(self, autocommit: bool, timeout_ms: int) -> None:
        self.closed = True


def committer() -> tuple[KafkaSource, CommitConsumer, Errors, Readiness]:
    meter, ready = Errors(), Readiness(*CONDITIONS)

    class CommitSource(KafkaSource):
        def _connect(self) -> CommitConsumer:  # type: ignore[override]
            return CommitConsumer()

    src = CommitSource(settings().kafka, NO_WAIT, meter, ready)
    return src, src.consumer, meter, ready  # type: ignore[return-value]


def test_a_commit_is_sent_with_every_owned_partition_and_not_waited_for() -> None:
    src, consumer, meter, _ = committer()
    assert src.commit({("in", 0): 5, ("in", 1): 3})
    assert src.commit({("in", 0): 9})
    assert consumer.sent == [{0: 5, 1: 3}, {0: 9, 1: 3}]
    consumer.answer(object())  # both accepted
    consumer.answer(object())
    assert src.commit({("in", 2): 1}) and meter.kinds == []


def test_a_refused_commit_is_reported_by_the_next_one() -> None:
    src, consumer, meter, _ = committer()
    src.commit({("in", 0): 5})
    consumer.answer(CommitFailedError("the group moved on"))
    assert src.commit({("in", 0): 6}) is False
    assert src.commit({("in", 0): 7}) is True  # said once
    assert meter.kinds == []


def test_a_commit_failed_while_the_broker_was_away_is_carried_by_the_next() -> None:
    src, consumer, meter, ready = committer()
    ready.set("state open", True)
    src.commit({("in", 1): 4})
    consumer.answer(NotCoordinatorError("moving"))
    assert meter.kinds == ["broker"]
    assert ready()[1].startswith("broker reachable: commit failed:")
    assert src.commit({("in", 0): 2})
    assert consumer.sent[-1] == {0: 2, 1: 4}


def test_a_commit_that_failed_for_good_is_raised_by_the_next() -> None:
    src, consumer, _, _ = committer()
    src.commit({("in", 0): 5})
    consumer.answer(GroupAuthorizationFailedError("g"))
    with pytest.raises(GroupAuthorizationFailedError):
        src.commit({("in", 0): 6})


def test_revoked_partitions_are_not_committed_any_more() -> None:
    src, consumer, _, _ = committer()
    src.commit({("in", 0): 5, ("in", 1): 3})
    consumer.listener.on_partitions_revoked([TopicPartition("in", 1)])  # type: ignore[attr-defined]
    src.commit({("in", 0): 6})
    assert consumer.sent[-1] == {0: 6}


def test_before_a_revocation_the_service_settles_and_its_commit_still_counts() -> None:
    src, consumer, _, _ = committer()
    src.before_revoke(lambda: src.commit({("in", 1): 8}))  # the batch in flight, completed
    consumer.listener.on_partitions_revoked([TopicPartition("in", 1)])  # type: ignore[attr-defined]
    assert consumer.sent == [{1: 8}]
    consumer.owned.discard(TopicPartition("in", 1))
    src.commit({("in", 0): 2, ("in", 1): 9})  # a batch that read it before it moved
    assert consumer.sent[-1] == {0: 2}


def test_close_commits_and_waits_then_leaves() -> None:
    src, consumer, _, _ = committer()
    src.commit({("in", 0): 5})
    src.close()
    assert consumer.synced == [{0: 5}] and consumer.closed
    refused, refused_consumer, _, _ = committer()
    refused.commit({("in", 0): 5})
    refused_consumer.sync_error = CommitFailedError("the group moved on")
    refused.close()  # logged: the next owner replays the batch
    assert refused_consumer.closed


@dataclass
class MetadataProducer:
    """A producer whose metadata requests time out `failing` times first (confluent-kafka's
    `list_topics`)."""

    failing: int = 0
    asked: list[str] = field(default_factory=list)

    def list_topics(self, topic: str, timeout: float) -> SimpleNamespace:
        if self.failing:
            self.failing -= 1
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT))
        self.asked.append(topic)
        return SimpleNamespace(topics={topic: SimpleNamespace(error=None, partitions={0: 0})})


class MetadataSink(KafkaSink):
    def _connect(self) -> MetadataProducer:  # type: ignore[override]
        return MetadataProducer(failing=1)

    def _max_message_bytes(self, topics: Sequence[str]) -> dict[str, int]:
        return dict.fromkeys(topics, 2_000_000)


def test_the_sink_learns_every_topic_it_is_given_waiting_out_timeouts() -> None:
    sink = MetadataSink(settings().kafka, NO_WAIT)
    limits = sink.prepare(["out", "dead"])
    assert sink.producer.asked == ["out", "dead"]  # type: ignore[attr-defined]
    assert limits == {"out": 1_000_000, "dead": 1_000_000}  # never more than the producer sends


@dataclass
class TopicErrorProducer:
    """Metadata that names `errors` for the topic, one answer each, then the topic."""

    errors: list[int]

    def list_topics(self, topic: str, timeout: float) -> SimpleNamespace:
        error = KafkaError(self.errors.pop(0)) if self.errors else None
        return SimpleNamespace(topics={topic: SimpleNamespace(error=error, partitions={0: 0})})


def test_a_leader_being_elected_is_waited_out_and_a_missing_topic_named() -> None:
    class Sink(MetadataSink):
        def _connect(self) -> TopicErrorProducer:  # type: ignore[override]
            return TopicErrorProducer([KafkaError.LEADER_NOT_AVAILABLE,
                                       KafkaError.UNKNOWN_TOPIC_OR_PART])

    sink = Sink(settings().kafka, NO_WAIT)
    with pytest.raises(ServiceError, match="topic out does not exist"):
        sink.prepare(["out"])  # the first answer was waited out, the second is final
    assert sink.producer.errors == []  # type: ignore[attr-defined]
    sink.prepare(["out"])


@dataclass
class PreparingSink(FakeSink):
    prepared: list[str] = field(default_factory=list)

    def prepare(self, topics: list[str]) -> None:
        self.prepared.extend(topics)


def test_check_topics_has_the_sink_learn_the_output_topics() -> None:
    s = settings()
    src = FakeSource([])
    sink = PreparingSink(src.log)
    svc = Service(s, Engine(s, MemoryStore(TABLES)), src, sink, Shutdown(1.0))
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
    svc = Service(s, Engine(s, MemoryStore(TABLES)), src, FakeSink(src.log), Shutdown(1.0), meter)
    polls = src.poll

    def poll(wait: bool = True) -> list[Rec]:
        batch = polls(wait)
        if not batch:
            svc.shutdown.request()
        return batch

    src.poll = poll  # type: ignore[method-assign]
    svc.run()
    assert meter.calls[0] == ("state", True) and ("batch", True) in meter.calls
    assert all(frozen for _, frozen in meter.calls)
    assert svc.stats.records == 1
