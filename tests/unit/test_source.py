"""The input edge with a fake consumer: a batch sorted by timestamp, one poll a batch on a live
feed and more to fill one from a backlog, a failed poll that reports the broker away, commits that
carry every owned partition's acknowledged offsets, and rebalances that settle first and drop what
was polled from partitions moved away."""

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from kafka import TopicPartition
from kafka.consumer.fetcher import ConsumerRecord
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.errors import CommitFailedError, KafkaConnectionError, KafkaError
from kafka.structs import OffsetAndMetadata

from stream_dedup.config import KafkaSettings
from stream_dedup.kafka.reporting import BROKER_REACHABLE, PARTITIONS_ASSIGNED
from stream_dedup.kafka.retry import Backoff
from stream_dedup.kafka.source import BACKLOG_RECORDS, KafkaSource

pytestmark = pytest.mark.unit
P0, P1 = TopicPartition("in", 0), TopicPartition("in", 1)
# A poll's answer: records, an error raised, or a rebalance run inside the poll (given the
# consumer, it calls the listener and returns the records fetched after it).
Polled = dict[TopicPartition, list[ConsumerRecord]] | KafkaError | Callable


def rec(tp: TopicPartition, offset: int, ts: int) -> ConsumerRecord:
    return ConsumerRecord(tp.topic, tp.partition, -1, offset, ts, 0, None, b"x", [], None,
                          -1, -1, -1)


@dataclass
class FakeConsumer:
    polls: list[Polled] = field(default_factory=list)
    owned: set[TopicPartition] = field(default_factory=lambda: {P0, P1})
    high: dict[TopicPartition, int] = field(default_factory=dict)
    positions: dict[TopicPartition, int] = field(default_factory=dict)
    commits: list[dict[TopicPartition, OffsetAndMetadata]] = field(default_factory=list)
    callbacks: list[Callable] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    listener: ConsumerRebalanceListener | None = None

    def subscribe(self, topics: list[str], listener: ConsumerRebalanceListener) -> None:
        self.listener = listener

    def assignment(self) -> set[TopicPartition]:
        return self.owned

    def poll(self, timeout_ms: int, max_records: int) -> dict[TopicPartition, list]:
        self.log.append(f"poll {max_records}")
        got = self.polls.pop(0) if self.polls else {}
        if isinstance(got, KafkaError):
            raise got
        return got(self) if callable(got) else got

    def highwater(self, tp: TopicPartition) -> int | None:
        return self.high.get(tp)

    def position(self, tp: TopicPartition, timeout_ms: int) -> int | None:
        return self.positions.get(tp)

    def commit_async(self, offsets: dict, callback: Callable) -> None:
        self.commits.append(offsets)
        self.callbacks.append(lambda answer: callback(offsets, answer))

    def commit(self, offsets: dict, timeout_ms: int) -> None:
        self.log.append("commit")
        self.commits.append(offsets)

    def close(self, autocommit: bool, timeout_ms: int) -> None:
        self.log.append(f"close autocommit={autocommit}")


@dataclass
class Conditions:
    now: dict[str, bool] = field(default_factory=dict)

    def set(self, condition: str, ok: bool, detail: str = "") -> None:
        self.now[condition] = ok


def source(consumer: FakeConsumer, monkeypatch: pytest.MonkeyPatch,
           batch: int = 10) -> tuple[KafkaSource, Conditions]:
    monkeypatch.setattr(KafkaSource, "_connect", lambda self: consumer)
    ready = Conditions()
    settings = KafkaSettings(input_topics=("in",), poll_batch_size=batch)
    return KafkaSource(settings, Backoff(0.0, 0.0, sleep=lambda s: None), ready=ready), ready


def offsets(commit: dict[TopicPartition, OffsetAndMetadata]) -> dict[TopicPartition, int]:
    return {tp: o.offset for tp, o in commit.items()}


def test_a_live_batch_is_one_poll_sorted_by_timestamp(monkeypatch: pytest.MonkeyPatch) -> None:
    consumer = FakeConsumer([{P0: [rec(P0, 0, 30), rec(P0, 1, 30)], P1: [rec(P1, 5, 10)]},
                             {P1: [rec(P1, 6, 40)]}])
    src, ready = source(consumer, monkeypatch)
    batch = src.poll()
    assert [(r.partition, r.offset) for r in batch] == [(1, 5), (0, 0), (0, 1)]  # stable
    assert consumer.log == ["poll 10"] and ready.now[BROKER_REACHABLE]


def test_a_backlog_fills_the_batch_from_further_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    consumer = FakeConsumer([{P0: [rec(P0, 0, 1)]}, {}, {P0: [rec(P0, 1, 2), rec(P0, 2, 3)]}],
                            high={P0: BACKLOG_RECORDS + 10})
    src, _ = source(consumer, monkeypatch, batch=3)
    assert [r.offset for r in src.poll()] == [0, 1, 2]
    assert consumer.log == ["poll 3", "poll 2", "poll 2"]  # an empty answer waited out once


def test_a_failed_poll_reports_the_broker_away(monkeypatch: pytest.MonkeyPatch) -> None:
    consumer = FakeConsumer([KafkaConnectionError("refused"), KafkaError("fatal")])
    src, ready = source(consumer, monkeypatch)
    assert src.poll() == [] and ready.now[BROKER_REACHABLE] is False
    with pytest.raises(KafkaError, match="fatal"):
        src.poll()


def test_commits_carry_every_owned_partitions_acknowledged_offsets(
        monkeypatch: pytest.MonkeyPatch) -> None:
    consumer = FakeConsumer()
    src, _ = source(consumer, monkeypatch)
    assert src.commit({("in", 0): 5, ("other", 0): 9})  # not owned: left out
    assert src.commit({("in", 1): 7})
    assert [offsets(c) for c in consumer.commits] == [{P0: 5}, {P0: 5, P1: 7}]


def test_a_refused_commit_is_told_once_and_a_fatal_one_raised(
        monkeypatch: pytest.MonkeyPatch) -> None:
    consumer = FakeConsumer()
    src, _ = source(consumer, monkeypatch)
    src.commit({("in", 0): 5})
    consumer.callbacks[-1](CommitFailedError("group moved on"))
    assert src.commit({("in", 0): 6}) is False
    assert src.commit({("in", 0): 7}) is True
    consumer.callbacks[-1](KafkaError("not authorized"))
    with pytest.raises(KafkaError, match="not authorized"):
        src.commit({("in", 0): 8})


def test_a_revocation_settles_first_and_drops_the_revoked_offsets(
        monkeypatch: pytest.MonkeyPatch) -> None:
    consumer = FakeConsumer()
    src, ready = source(consumer, monkeypatch)
    src.before_revoke(lambda: consumer.log.append("settle"))
    src.commit({("in", 0): 5, ("in", 1): 7})
    assert consumer.listener is not None
    consumer.listener.on_partitions_revoked([P1])
    consumer.owned = {P0}
    src.commit({})
    assert consumer.log == ["settle"] and offsets(consumer.commits[-1]) == {P0: 5}
    assert ready.now[PARTITIONS_ASSIGNED]
    consumer.listener.on_partitions_revoked([P0])
    assert ready.now[PARTITIONS_ASSIGNED] is False


def moved(gone: set[TopicPartition], kept: set[TopicPartition],
          after: dict[TopicPartition, list[ConsumerRecord]]) -> Callable:
    """A rebalance inside a poll: every partition revoked, `kept` assigned again, `gone` not;
    then the records fetched after it."""
    def rebalance(consumer: FakeConsumer) -> dict[TopicPartition, list[ConsumerRecord]]:
        assert consumer.listener is not None
        consumer.listener.on_partitions_revoked(list(gone | kept))
        consumer.owned = kept
        consumer.listener.on_partitions_assigned(list(kept))
        return after
    return rebalance


def test_a_rebalance_while_a_backlog_fills_drops_the_partitions_moved_away(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The second poll of the batch runs a rebalance that moves P1 to another member: P1's
    # records of the first poll are its new owner's now; P0 kept its position, so its records
    # of both polls make the batch, in order.
    consumer = FakeConsumer([{P0: [rec(P0, 0, 1)], P1: [rec(P1, 3, 2)]},
                             moved({P1}, {P0}, {P0: [rec(P0, 1, 3)]})],
                            high={P0: BACKLOG_RECORDS + 10, P1: BACKLOG_RECORDS + 10})
    src, _ = source(consumer, monkeypatch, batch=3)
    assert [(r.partition, r.offset) for r in src.poll()] == [(0, 0), (0, 1)]
    src.commit({("in", 0): 2, ("in", 1): 4})
    assert offsets(consumer.commits[-1]) == {P0: 2}  # nothing of P1's is this member's


def test_lags_are_the_high_watermark_after_the_position(monkeypatch: pytest.MonkeyPatch) -> None:
    consumer = FakeConsumer(high={P0: 50, P1: 3}, positions={P0: 20, P1: 5})
    src, _ = source(consumer, monkeypatch)
    assert src.lags() == {("in", 0): 30, ("in", 1): 0}
    consumer.high = {P0: 50}  # not fetched from yet: left out
    assert src.lags() == {("in", 0): 30}


def test_close_commits_the_acknowledged_work_and_leaves(monkeypatch: pytest.MonkeyPatch) -> None:
    consumer = FakeConsumer()
    src, _ = source(consumer, monkeypatch)
    src.commit({("in", 0): 5})
    src.close()
    assert consumer.log == ["commit", "close autocommit=False"]
    assert offsets(consumer.commits[-1]) == {P0: 5}
