"""A real Prometheus (deploy/prometheus.sh, Debian's package) scrapes the streaming service during
a real Kafka run. PromQL over Prometheus's HTTP API must count what the service itself counted,
and every expression of the Grafana dashboard and of the alert rules must find its series in
that Prometheus, so a renamed metric or label breaks the build.

The service runs in a thread of this process with the metrics wired as `MeteredService` shows:
`observe_batch` once a batch's outputs are acknowledged, `set_lag` after each commit,
`count_error` on failed deliveries and refused commits, readiness from the consumer's state.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import service_unavailable
from kafka_helpers import (
    make_topics,
    produce,
    read_topic,
    service_settings,
    stream_lines,
    wait_drained,
)
from prometheus_client import CollectorRegistry

from stream_dedup.config import Settings
from stream_dedup.engine import Engine
from stream_dedup.health import Readiness
from stream_dedup.kafka.retry import Backoff, Shutdown
from stream_dedup.kafka.route import InputRecord, Output
from stream_dedup.kafka.service import Service
from stream_dedup.kafka.sink import KafkaSink
from stream_dedup.kafka.source import KafkaSource
from stream_dedup.metrics import ServiceMetrics
from stream_dedup.records import Message, Verdict
from stream_dedup.state import open_store

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "deploy/grafana/dashboards/stream-dedup.json"
ALERTS = REPO / "deploy/prometheus/alerts.yml"
# Grafana fills these in; Prometheus sees what Grafana would send for "All" instances.
GRAFANA_VARIABLES = {"$__rate_interval": "1m", "$instance": ".*"}
COMPARISON = re.compile(r" (==|!=|>=|<=|>|<) ")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True, slots=True)
class Prometheus:
    url: str
    metrics_port: int  # the target it scrapes as job "stream-dedup"

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query; fails the test on a PromQL error."""
        url = f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        try:
            with urllib.request.urlopen(url, timeout=10) as resp:
                body = json.load(resp)
        except urllib.error.HTTPError as exc:
            pytest.fail(f"{expr}: {exc.code} {exc.read().decode()}")
        assert body["status"] == "success", body
        return body["data"]["result"]

    def scalar(self, expr: str) -> float:
        result = self.query(expr)
        assert len(result) == 1, f"{expr}: {result}"
        return float(result[0]["value"][1])

    def get(self, path: str) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.url}{path}", timeout=10) as resp:
            return json.load(resp)


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    """A fresh Prometheus on a free port, scraping 127.0.0.1:<metrics_port> every second."""
    if shutil.which("prometheus") is None:
        service_unavailable("prometheus is not installed (apt-get install "
                            "--no-install-recommends prometheus; deploy/test.sh does it)")
    port, metrics_port = free_port(), free_port()
    env = {**os.environ, "PROMETHEUS_PORT": str(port),
           "PROMETHEUS_TARGETS": f"127.0.0.1:{metrics_port}",
           "PROMETHEUS_SCRAPE_INTERVAL": "1s",
           "PROMETHEUS_RUN_DIR": str(tmp_path_factory.mktemp("prometheus"))}
    script = str(REPO / "deploy/prometheus.sh")
    start = subprocess.run(["bash", script, "start"], env=env, capture_output=True, text=True,
                           timeout=60, check=False)
    assert start.returncode == 0, start.stderr
    try:
        yield Prometheus(f"http://127.0.0.1:{port}", metrics_port)
    finally:
        subprocess.run(["bash", script, "stop"], env=env, capture_output=True, timeout=60,
                       check=False)


def partition_lags(consumer: Any) -> dict[tuple[str, int], int]:
    """High watermark - position of every owned partition that has been fetched from."""
    lags = {}
    for tp in consumer.assignment() or ():
        high, position = consumer.highwater(tp), consumer.position(tp, timeout_ms=0)
        if high is not None and position is not None:
            lags[(tp.topic, tp.partition)] = max(high - position, 0)
    return lags


class MeteredService:
    """The service in a background thread, its metrics on the metrics port.

    The service's steps are wrapped (engine, source, sink) to make the metric calls the service
    itself is to make, at the same points: after delivery, after commit, on failures.
    """

    def __init__(self, settings: Settings, state: Path, metrics_port: int) -> None:
        k = settings.kafka
        self.registry = CollectorRegistry()
        self.metrics = ServiceMetrics(self.registry, settings, topics=k.input_topics)
        self.ready = Readiness("state open", "broker reachable", "partitions assigned")
        self.server = self.metrics.serve(metrics_port, "127.0.0.1", self.ready)
        self.shutdown = Shutdown(k.shutdown_timeout_s)
        backoff = Backoff(k.retry_backoff_s, k.retry_backoff_max_s, self.shutdown.expired)
        self.engine = Engine(settings, open_store(settings.state.backend, str(state)))
        self.ready.set("state open", True)
        self.source = KafkaSource(k, backoff)
        self.records: Sequence[InputRecord] = ()
        self.verdicts: Sequence[Verdict] = ()
        sink = _Sink(self, KafkaSink(k, backoff))
        self.service = Service(settings, _Engine(self), _Source(self), sink, self.shutdown)
        self.service.check_topics()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        try:
            self.service.run()
        except BaseException as exc:
            self.error = exc

    def stop(self) -> None:
        self.shutdown.request()
        self.thread.join(60)
        self.server.close()
        assert not self.thread.is_alive(), "the service did not stop"
        assert self.error is None, f"the service failed: {self.error!r}"


class _Engine:
    def __init__(self, run: MeteredService) -> None:
        self.run = run

    def process(self, messages: Sequence[Message]) -> list[Verdict]:
        verdicts = self.run.engine.process(messages)
        self.run.verdicts = verdicts
        return verdicts

    def close(self) -> None:
        self.run.engine.close()


class _Source:
    def __init__(self, run: MeteredService) -> None:
        self.run = run

    def poll(self) -> list[InputRecord]:
        records = self.run.source.poll()
        self.run.records = records
        self.run.ready.set("broker reachable", True)
        owned = self.run.source.consumer.assignment()
        self.run.ready.set("partitions assigned", bool(owned), "" if owned else "none yet")
        return records

    def commit(self, offsets: dict[tuple[str, int], int]) -> bool:
        committed = self.run.source.commit(offsets)
        if not committed:
            self.run.metrics.count_error("commit")
        self.run.metrics.set_lag(partition_lags(self.run.source.consumer))
        return committed

    def topics(self) -> set[str]:
        return self.run.source.topics()

    def close(self) -> None:
        self.run.source.close()


class _Sink:
    def __init__(self, run: MeteredService, sink: KafkaSink) -> None:
        self.run, self.sink = run, sink

    def deliver(self, outputs: Sequence[Output]) -> None:
        try:
            self.sink.deliver(outputs)
        except Exception:
            self.run.metrics.count_error("produce")
            raise
        now_ms = time.time() * 1000
        self.run.metrics.observe_batch(
            self.run.engine, self.run.verdicts,
            dead_letters=sum(o.kind == "dead_letter" for o in outputs),
            topic_counts=Counter(r.topic for r in self.run.records),
            e2e_latencies_s=[(now_ms - o.timestamp_ms) / 1000 for o in outputs])

    def close(self) -> None:
        self.sink.close()


def dashboard_queries() -> list[tuple[str, str]]:
    """(panel title, PromQL) of every panel, with Grafana's variables filled in."""
    dash = json.loads(DASHBOARD.read_text())
    out = []
    for panel in dash["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for name, value in GRAFANA_VARIABLES.items():
                expr = expr.replace(name, value)
            out.append((panel["title"], expr))
    for var in dash["templating"]["list"]:
        if var["type"] == "query":
            # label_values(metric, label) is Grafana's; the metric must exist.
            out.append((f"variable {var['name']}",
                        re.fullmatch(r"label_values\((\w+), *\w+\)", var["definition"])[1]))
    return out


def alert_rules() -> list[tuple[str, str]]:
    """(alert, expression) of every alert rule."""
    groups = yaml.safe_load(ALERTS.read_text())["groups"]
    return [(r["alert"], r["expr"]) for g in groups for r in g["rules"]]


def as_bool(expr: str) -> str:
    """Every comparison made a `bool` one: `a > 5` filters series out when all is well,
    `a > bool 5` keeps them (at 0), so the expression must find its series whether or not the
    alert would fire now."""
    return COMPARISON.sub(r" \1 bool ", expr)


def wait_scraped(prometheus: Prometheus, expr: str, value: float, timeout_s: float) -> None:
    """Until `expr` (one series) reaches `value` in Prometheus."""
    deadline = time.monotonic() + timeout_s
    while not (got := prometheus.query(expr)) or float(got[0]["value"][1]) < value:
        assert time.monotonic() < deadline, f"{expr} is {got}, not {value}, after {timeout_s} s"
        time.sleep(0.5)


def test_prometheus_counts_what_the_service_counted(prometheus, kafka_bootstrap, unique_topic,
                                                    tmp_path) -> None:
    rng = random.Random(5)
    _, good = stream_lines(3000)
    lines = list(good)
    for raw in [b"\xff not utf-8", b'{"id": "x", "text": ', b'{"id": "y"}'] * 10:
        lines.insert(rng.randrange(len(lines) + 1), raw)
    topics = make_topics(unique_topic, input_partitions=3)
    settings = service_settings(kafka_bootstrap, topics, f"prom-{uuid.uuid4().hex[:8]}")
    run = MeteredService(settings, tmp_path / "state", prometheus.metrics_port)
    try:
        ready = urllib.request.Request(f"http://127.0.0.1:{prometheus.metrics_port}/readyz")
        with pytest.raises(urllib.error.HTTPError) as not_ready:
            urllib.request.urlopen(ready, timeout=5)
        assert not_ready.value.code == 503
        assert b"partitions assigned: not yet" in not_ready.value.read()
        # Prometheus hands new targets to its scrapers every 5 s: wait until it scrapes.
        wait_scraped(prometheus, 'max(up{job="stream-dedup"})', 1, timeout_s=20)
        run.start()
        # Spread over ~3 s so Prometheus sees the counters move over several scrapes.
        produce(kafka_bootstrap, topics["input"], lines, rate=1000.0)
        wait_drained(settings, timeout_s=60, alive=run.thread.is_alive)
        with urllib.request.urlopen(ready, timeout=5) as resp:
            assert resp.status == 200
        wait_scraped(prometheus, 'sum(stream_dedup_messages_in_total{job="stream-dedup"})',
                     len(lines), timeout_s=20)
        # rate() and deriv() need two samples in their range; scrapes that timed out while the
        # service was busy left gaps: wait for a few more.
        wait_scraped(prometheus, 'min(count_over_time(stream_dedup_build_info[1m]))', 5,
                     timeout_s=20)
        scraped = {v: prometheus.scalar(f'sum(stream_dedup_verdicts_total{{verdict="{v}"}})')
                   for v in ("unique", "exact", "near", "dead_letter")}
        scraped_in = prometheus.scalar("sum(stream_dedup_messages_in_total)")
        scraped_replayed = prometheus.scalar("sum(stream_dedup_replayed_total)")
        queries = dashboard_queries() + [(a, as_bool(e)) for a, e in alert_rules()]
        missing = [(what, expr) for what, expr in queries if not prometheus.query(expr)]
        for _, expr in alert_rules():
            prometheus.query(expr)  # as written: a PromQL error fails here
        rules = [r for g in prometheus.get("/api/v1/rules")["data"]["groups"] for r in g["rules"]]
    finally:
        run.stop()

    stats = run.service.stats  # the service's own summary
    assert scraped_in == stats.records == len(lines)
    assert scraped["unique"] == stats.outputs["unique"]
    assert scraped["exact"] + scraped["near"] == stats.duplicates == stats.outputs["duplicate"]
    assert scraped["dead_letter"] == stats.outputs["dead_letter"] == 30
    assert scraped_replayed == stats.replayed
    # And what the broker holds agrees with both.
    assert len(read_topic(kafka_bootstrap, topics["output"])) == scraped["unique"]
    assert len(read_topic(kafka_bootstrap, topics["dead"])) == scraped["dead_letter"]
    print(f"\nPromQL: {scraped_in:.0f} in, {scraped}; dashboard and alert expressions: "
          f"{len(queries)}, without a series: {missing}")
    assert not missing, "expressions that found no series: " + "; ".join(
        f"{what}: {expr}" for what, expr in missing)
    assert len(rules) == len(alert_rules())
    assert all(r["health"] == "ok" for r in rules), [(r["name"], r.get("lastError"))
                                                     for r in rules]
