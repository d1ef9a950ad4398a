"""The metrics and readiness wired into the streaming service: the loop reports each batch, a
refused commit and the lag to a real `ServiceMetrics` (fresh registry, fakes at the Kafka edges);
the source sets readiness and counts broker errors; the sink counts failed deliveries; the
backoff reports its retries; the progress line reads as fields in both log formats."""

from __future__ import annotations

import io
import json
import logging
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import KafkaError
from kafka import TopicPartition
from kafka.errors import KafkaConnectionError
from prometheus_client import CollectorRegistry
from test_runtime_service import TEXT, FakeSink, FakeSource, Rec, rec, settings

from stream_dedup import errors
from stream_dedup.config import MetricsSettings
from stream_dedup.engine.batch import Engine
from stream_dedup.engine.stored import TABLES
from stream_dedup.kafka import ServiceError
from stream_dedup.kafka.reporting import CONDITIONS, NULL_METER
from stream_dedup.kafka.retry import Backoff, Shutdown
from stream_dedup.kafka.route import Output
from stream_dedup.kafka.sink import KafkaSink
from stream_dedup.kafka.source import KafkaSource
from stream_dedup.ops.health import Readiness
from stream_dedup.ops.logs import HUMAN_FORMAT, JsonFormatter
from stream_dedup.ops.metrics import ServiceMetrics
from stream_dedup.runtime import contracts, service
from stream_dedup.runtime.lifecycle import metrics_url, start_metrics_port
from stream_dedup.runtime.service import Service
from stream_dedup.state import MemoryStore
from stream_dedup.tools.demo import Summary, print_summary

pytestmark = pytest.mark.unit
NOW_MS = int(time.time() * 1000)


@dataclass
class Errors:
    """A Meter that only keeps the error kinds it was told of."""

    kinds: list[str] = field(default_factory=list)

    def observe_batch(self, *args: object, **kw: object) -> None:
        return

    def set_lag(self, partition_lags: object) -> None:
        return

    def count_error(self, kind: str) -> None:
        self.kinds.append(kind)


@dataclass
class LaggingSource(FakeSource):
    lag: dict[tuple[str, int], int] = field(default_factory=dict)
    refuse: bool = False

    def commit(self, offsets: dict[tuple[str, int], int]) -> bool:
        super().commit(offsets)
        return not self.refuse

    def lags(self) -> dict[tuple[str, int], int]:
        return dict(self.lag)


def metered(batches: list[list[Rec]]) -> tuple[Service, LaggingSource, CollectorRegistry]:
    s = settings()
    registry = CollectorRegistry()
    metrics = ServiceMetrics(registry, s, topics=s.kafka.input_topics)
    source = LaggingSource(batches)
    svc = Service(s, Engine(s, MemoryStore(TABLES)), source, FakeSink(source.log), Shutdown(1.0),
                  metrics, Readiness(*CONDITIONS))
    return svc, source, registry


def test_the_loop_counts_each_acknowledged_batch_refused_commits_and_lag() -> None:
    batch = [rec(0, 0, "a", TEXT, timestamp=NOW_MS - 2000), rec(1, 0, "b", TEXT),
             Rec("in", 1, 1, b"\xff"), rec(0, 1, "c", "完全不同的另一条消息内容在这里出现")]
    svc, source, r = metered([batch, [rec(0, 2, "a", TEXT)]])
    source.lag = {("in", 0): 5, ("in", 1): 0}
    svc.step()
    svc.complete()
    v = r.get_sample_value
    assert v("stream_dedup_messages_in_total", {"topic": "in"}) == 4
    assert v("stream_dedup_verdicts_total", {"verdict": "unique"}) == 2
    assert v("stream_dedup_verdicts_total", {"verdict": "exact"}) == 1
    assert v("stream_dedup_verdicts_total", {"verdict": "dead_letter"}) == 1
    assert v("stream_dedup_end_to_end_latency_seconds_count") == 4  # one per output
    assert v("stream_dedup_end_to_end_latency_seconds_bucket", {"le": "1.0"}) == 0
    assert v("stream_dedup_consumer_lag_records", {"topic": "in", "partition": "0"}) == 5
    assert v("stream_dedup_errors_total", {"kind": "commit"}) == 0
    # A replayed record whose commit the group refused; then partition 1 is no longer owned.
    source.refuse, source.lag = True, {("in", 0): 0}
    svc.step()
    svc.complete()
    assert v("stream_dedup_replayed_total") == 1
    assert v("stream_dedup_errors_total", {"kind": "commit"}) == 1
    assert svc.stats.refused_commits == 1
    assert v("stream_dedup_consumer_lag_records", {"topic": "in", "partition": "1"}) is None
    assert v("stream_dedup_messages_in_total", {"topic": "in"}) == svc.stats.records == 5


def test_an_idle_poll_still_refreshes_the_lag_and_stopping_closes_the_state() -> None:
    svc, source, r = metered([])
    ready = svc.ready
    ready.set("state open", True)
    source.lag = {("in", 2): 7}
    assert svc.step() == 0
    assert r.get_sample_value("stream_dedup_consumer_lag_records",
                              {"topic": "in", "partition": "2"}) == 7
    svc.shutdown.request()
    svc.run()
    assert ready() == (False, "state open: the service is stopping\n"
                              "broker reachable: not yet\npartitions assigned: not yet")


def test_a_failed_delivery_counts_nothing_of_the_batch() -> None:
    svc, source, r = metered([[rec(0, 0, "a", TEXT)]])
    svc.sink.fail = KafkaConnectionError("away")  # type: ignore[attr-defined]
    assert svc.step() == 1
    with pytest.raises(KafkaConnectionError):
        svc.complete()
    assert r.get_sample_value("stream_dedup_messages_in_total", {"topic": "in"}) == 0
    assert "commit" not in source.log


def test_backoff_reports_each_retry() -> None:
    calls: list[int] = []
    retried: list[tuple[str, str]] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise KafkaConnectionError("refused")
        return "ok"

    backoff = Backoff(0.0, 0.0, sleep=lambda _: None,
                      on_retry=lambda what, exc: retried.append((what, type(exc).__name__)))
    assert backoff.call("listing topics", flaky) == "ok"
    assert retried == [("listing topics", "KafkaConnectionError")] * 2


# -- the source, on a fake consumer ---------------------------------------------------------

class FakeConsumer:
    def __init__(self) -> None:
        self.owned: set[TopicPartition] = set()
        self.high: dict[TopicPartition, int] = {}
        self.pos: dict[TopicPartition, int] = {}
        self.fail: Exception | None = None
        self.listener = None

    def subscribe(self, topics: list[str], listener) -> None:
        self.listener = listener

    def assignment(self) -> set[TopicPartition]:
        return set(self.owned)

    def rebalance(self, owned: set[TopicPartition]) -> None:
        """Eager protocol: everything revoked, then the new assignment."""
        self.listener.on_partitions_revoked(sorted(self.owned))
        self.owned = set(owned)
        self.listener.on_partitions_assigned(sorted(owned))

    def highwater(self, tp: TopicPartition) -> int | None:
        return self.high.get(tp)

    def position(self, tp: TopicPartition, timeout_ms: int | None = None) -> int | None:
        return self.pos.get(tp)

    def poll(self, timeout_ms: int, max_records: int) -> dict:
        if self.fail is not None:
            raise self.fail
        return {}


class FakeKafkaSource(KafkaSource):
    def _connect(self) -> FakeConsumer:  # type: ignore[override]
        return FakeConsumer()


def fake_source() -> tuple[FakeKafkaSource, FakeConsumer, Errors, Readiness]:
    meter, ready = Errors(), Readiness(*CONDITIONS)
    k = settings(batch_wait_ms=0)
    source = FakeKafkaSource(k.kafka, Backoff(0.0, 0.0, sleep=lambda _: None), meter, ready)
    return source, source.consumer, meter, ready  # type: ignore[return-value]


def test_lags_are_high_watermark_minus_position_of_fetched_partitions() -> None:
    source, consumer, _, _ = fake_source()
    a, b, c = (TopicPartition("in", p) for p in range(3))
    consumer.owned = {a, b, c}
    consumer.high = {a: 100, b: 50, TopicPartition("in", 9): 7}
    consumer.pos = {a: 60, b: 50, c: 3}  # c: not fetched yet (no high watermark)
    assert source.lags() == {("in", 0): 40, ("in", 1): 0}


def test_readiness_follows_assignment_and_polls() -> None:
    source, consumer, meter, ready = fake_source()
    ready.set("state open", True)
    consumer.rebalance({TopicPartition("in", 0)})
    source.poll()
    assert ready() == (True, "ready")
    consumer.rebalance(set())  # a member with nothing to read is not ready
    assert ready() == (False, "partitions assigned: this member owns no input partition")
    consumer.rebalance({TopicPartition("in", 1)})
    consumer.fail = KafkaConnectionError("broker away")
    assert source.poll() == []
    ok, why = ready()
    assert not ok and why.startswith("broker reachable: poll failed:") and "broker away" in why
    assert meter.kinds == ["broker"]
    consumer.fail = None
    source.poll()
    assert ready() == (True, "ready")


# -- the sink, on a fake producer -----------------------------------------------------------

class FakeProducer:
    """confluent-kafka's Producer as the sink uses it: each `produce` is answered (its delivery
    report run) by the next `poll`; the first `failing` outputs are answered with `error`, and
    the reports wait `slow_polls` polls first."""

    def __init__(self) -> None:
        self.failing = 0
        self.error = KafkaError(KafkaError._MSG_TIMED_OUT)
        self.acked: list[bytes | None] = []
        self.reports: list[tuple[object, KafkaError | None]] = []
        self.slow_polls = 0
        self.polls = 0

    def produce(self, topic: str, value: bytes | None, key: bytes | None, *args: object,
                on_delivery: object, **kw: object) -> None:
        if self.failing:
            self.failing -= 1
            self.reports.append((on_delivery, self.error))
            return
        self.acked.append(value)
        self.reports.append((on_delivery, None))

    def poll(self, timeout: float) -> int:
        self.polls += 1
        if self.slow_polls:
            self.slow_polls -= 1
            return 0
        reports, self.reports = self.reports, []
        for report, error in reports:
            report(error, None)  # type: ignore[operator]
        return len(reports)


class FakeKafkaSink(KafkaSink):
    def _connect(self) -> FakeProducer:  # type: ignore[override]
        return FakeProducer()

    def _max_message_bytes(self, topics):  # no admin client: topics whose configs say nothing
        self.limits_read = [*getattr(self, "limits_read", []), *topics]
        return {}


def test_each_failed_delivery_attempt_is_one_produce_error() -> None:
    meter, ready = Errors(), Readiness(*CONDITIONS)
    sink = FakeKafkaSink(settings().kafka, Backoff(0.0, 0.0, sleep=lambda _: None), meter, ready)
    producer: FakeProducer = sink.producer  # type: ignore[assignment]
    outputs = [Output("unique", "out", None, str(i).encode(), [], NOW_MS) for i in range(3)]
    producer.failing = 4  # attempt 1: all 3 fail; attempt 2: 1 fails; attempt 3: acked
    sink.deliver(outputs)
    assert sorted(producer.acked) == [b"0", b"1", b"2"]
    assert meter.kinds == ["produce", "produce"]
    assert "broker reachable: delivery failed:" in ready()[1]
    producer.failing, producer.error = 1, KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)
    with pytest.raises(ServiceError, match="writing to out failed for good"):
        sink.deliver(outputs[:1])
    assert meter.kinds == ["produce"] * 3


def test_complete_waits_for_each_acknowledgement_without_flushing() -> None:
    sink = FakeKafkaSink(settings().kafka, Backoff(0.0, 0.0, sleep=lambda _: None))
    producer: FakeProducer = sink.producer  # type: ignore[assignment]
    producer.slow_polls = 2  # the send's own poll and the first wait answer nothing
    sent = sink.send([Output("unique", "out", None, b"x", [], NOW_MS)])
    assert producer.polls == 1 and sent.pending == 1  # sending does not wait
    sink.complete(sent)
    assert producer.polls == 3 and sent.pending == 0 and producer.acked == [b"x"]


# -- the progress line, the metrics port, the demo summary ----------------------------------

def test_progress_line_every_period_in_both_log_formats(monkeypatch, caplog) -> None:
    monkeypatch.setattr(service, "PROGRESS_EVERY_S", 0.0)
    svc, _, _ = metered([[rec(0, 0, "a", TEXT), rec(0, 1, "b", TEXT)]])
    original = svc.step

    def step() -> int:
        n = original()
        if not n:
            svc.shutdown.request()
        return n

    svc.step = step  # type: ignore[method-assign]
    with caplog.at_level(logging.INFO, logger="stream_dedup.runtime.service"):
        svc.run()
    lines = [r for r in caplog.records if r.getMessage().startswith(("progress ", "stopped "))]
    assert [r.getMessage().split()[0] for r in lines] == ["progress", "progress", "stopped"]
    human = logging.Formatter(HUMAN_FORMAT).format(lines[1])  # the batch completed
    assert " INFO stream_dedup.runtime.service: progress records=2 unique=1 duplicates=1 " \
        "dead_letters=0 replayed=0 batches=1 refused_commits=0 elapsed_s=" in human
    as_json = json.loads(JsonFormatter().format(lines[-1]))
    assert {k: as_json[k] for k in ("records", "unique", "duplicates", "dead_letters")} == \
        {"records": "2", "unique": "1", "duplicates": "1", "dead_letters": "0"}
    assert {f"{s}_s" for s in contracts.STEPS} <= as_json.keys()
    assert "msgs_per_s" in as_json and "elapsed_s" in as_json


def test_metrics_port_taken_is_a_service_error_naming_it() -> None:
    s = settings()
    metrics = ServiceMetrics(CollectorRegistry(), s)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        m = MetricsSettings(port=port, address="127.0.0.1")
        with pytest.raises(ServiceError, match=f"127.0.0.1:{port}"):
            start_metrics_port(metrics, m, Readiness(*CONDITIONS))
    assert start_metrics_port(metrics, MetricsSettings(port=0), Readiness()) is None


def test_metrics_url_and_the_demo_summary_says_it() -> None:
    assert metrics_url(MetricsSettings(port=9108)) == "http://127.0.0.1:9108/metrics"
    assert metrics_url(MetricsSettings(address="0.0.0.0"), 9200) == \
        "http://127.0.0.1:9200/metrics"
    out = io.StringIO()
    summary = Summary(10, 6, 3, 1, 2.0)
    k = settings().kafka
    print_summary(summary, k, Path("in.jsonl"), Path("/tmp/x.log"),
                  "http://127.0.0.1:9108/metrics", out)
    assert "metrics      http://127.0.0.1:9108/metrics" in out.getvalue()
    out = io.StringIO()
    print_summary(summary, k, Path("in.jsonl"), Path("/tmp/x.log"), None, out)
    assert "metrics      no metrics port (metrics.port is 0)" in out.getvalue()


def test_service_error_is_in_the_error_tree() -> None:
    assert ServiceError is errors.ServiceError
    assert issubclass(ServiceError, errors.StreamDedupError)
    assert "ServiceError" in (errors.__doc__ or "")


def test_without_metrics_the_service_reports_to_the_null_meter() -> None:
    s = settings()
    source = FakeSource([[rec(0, 0, "a", TEXT)]])
    svc = Service(s, Engine(s, MemoryStore(TABLES)), source, FakeSink(source.log), Shutdown(1.0))
    assert svc.metrics is NULL_METER
    assert svc.step() == 1 and source.log == []
    svc.complete()
    assert source.log == ["deliver", "commit"]


def test_client_errors_are_said_when_they_happen_once_per_period(caplog) -> None:
    sink = FakeKafkaSink(settings().kafka, Backoff(0.0, 0.0, sleep=lambda _: None))
    away = KafkaError(KafkaError._TRANSPORT, "connection refused")
    for _ in range(50):  # librdkafka reports each failed reconnect
        sink._error(away)
    sink._error(KafkaError(KafkaError._ALL_BROKERS_DOWN))
    said = [r.getMessage() for r in caplog.records if "producer error" in r.getMessage()]
    assert len(said) == 2 and "repeated=0" in said[0]


def test_an_idle_step_serves_the_producers_callbacks() -> None:
    svc, _, _ = metered([])
    served = []
    svc.sink.idle = lambda: served.append(True)  # type: ignore[method-assign]
    assert svc.step() == 0 and served == [True]
