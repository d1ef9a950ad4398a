"""A real Prometheus (deploy/prometheus.sh, Debian's package) scrapes the streaming service during
a real Kafka run. PromQL over Prometheus's HTTP API must count what the service itself counted,
and every expression of the Grafana dashboard and of the alert rules must find its series in
that Prometheus, so a renamed metric or label breaks the build.

The service is the real one: `stream-dedup --log-format json run` in a subprocess with
`STREAM_DEDUP__METRICS__PORT` set, wired by `stream_dedup.runtime.run.serve`; its own summary is the
"stopped" log line it writes when SIGTERM stops it.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
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
    start_service,
    stop_service,
    stream_lines,
    wait_drained,
)

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


def read_ready(port: int) -> tuple[int, str] | None:
    """(status, body) of the service's /readyz, or None while nothing answers on the port."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except (urllib.error.URLError, ConnectionError):
        return None


def readiness_until_ready(port: int, proc: subprocess.Popen, timeout_s: float
                          ) -> list[tuple[int, str]]:
    """Every /readyz answer that differs from the one before, from the first until 200."""
    seen: list[tuple[int, str]] = []
    deadline = time.monotonic() + timeout_s
    while not seen or seen[-1][0] != 200:
        assert proc.poll() is None, f"the service exited with {proc.returncode}"
        assert time.monotonic() < deadline, f"not ready after {timeout_s} s: {seen}"
        answer = read_ready(port)
        if answer is not None and (not seen or answer != seen[-1]):
            seen.append(answer)
        time.sleep(0.02)
    return seen


def service_summary(log: Path) -> dict[str, float]:
    """The fields of the last "stopped ..." line of a JSON service log: the service's totals."""
    for line in reversed(log.read_text(errors="replace").splitlines()):
        try:
            record = json.loads(line)
        except ValueError:
            continue  # not a log record (a warning printed by Python itself)
        if record.get("message", "").startswith("stopped "):
            return {k: float(v) for k, v in record.items()
                    if k not in ("time", "level", "logger", "message")}
    pytest.fail(f"no 'stopped' line in {log}")


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


def wait_scraped(prometheus: Prometheus, expr: str, value: float, timeout_s: float,
                 done: Callable[[float, float], bool] = lambda got, want: got >= want) -> None:
    """Until `expr` (one series) reaches `value` in Prometheus (`done(got, value)`)."""
    deadline = time.monotonic() + timeout_s
    while not (got := prometheus.query(expr)) or not done(float(got[0]["value"][1]), value):
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
    log = tmp_path / "service.log"
    port = prometheus.metrics_port
    proc = start_service(settings, tmp_path / "state", log, metrics_port=port, log_format="json")
    try:
        # The port answers before the state is open; ready once the group assigned partitions.
        answers = readiness_until_ready(port, proc, timeout_s=60)
        print(f"\nreadiness: {answers}")
        first = answers[0]
        assert first[0] == 503 and "partitions assigned: not yet" in first[1], answers
        # Prometheus hands new targets to its scrapers every 5 s: wait until it scrapes.
        wait_scraped(prometheus, 'max(up{job="stream-dedup"})', 1, timeout_s=20)
        # Spread over ~3 s so Prometheus sees the counters move over several scrapes.
        produce(kafka_bootstrap, topics["input"], lines, rate=1000.0)
        wait_drained(settings, timeout_s=60, alive=lambda: proc.poll() is None)
        assert read_ready(port) == (200, "ready\n")
        wait_scraped(prometheus, 'sum(stream_dedup_messages_in_total{job="stream-dedup"})',
                     len(lines), timeout_s=20)
        # Every input read: the lag of each partition falls to 0 (set after the last commit).
        wait_scraped(prometheus, "max(stream_dedup_consumer_lag_records)", 0, timeout_s=20,
                     done=lambda got, want: got <= want)
        # rate() and deriv() need two samples in their range; scrapes that timed out while the
        # service was busy left gaps: wait for a few more.
        wait_scraped(prometheus, 'min(count_over_time(stream_dedup_build_info[1m]))', 5,
                     timeout_s=20)
        scraped = {v: prometheus.scalar(f'sum(stream_dedup_verdicts_total{{verdict="{v}"}})')
                   for v in ("unique", "exact", "near", "dead_letter")}
        scraped_in = prometheus.scalar("sum(stream_dedup_messages_in_total)")
        scraped_replayed = prometheus.scalar("sum(stream_dedup_replayed_total)")
        scraped_e2e = prometheus.scalar("sum(stream_dedup_end_to_end_latency_seconds_count)")
        scraped_commit_errors = prometheus.scalar(
            'sum(stream_dedup_errors_total{kind="commit"})')
        lag_series = len(prometheus.query("stream_dedup_consumer_lag_records"))
        queries = dashboard_queries() + [(a, as_bool(e)) for a, e in alert_rules()]
        missing = [(what, expr) for what, expr in queries if not prometheus.query(expr)]
        for _, expr in alert_rules():
            prometheus.query(expr)  # as written: a PromQL error fails here
        rules = [r for g in prometheus.get("/api/v1/rules")["data"]["groups"] for r in g["rules"]]
    finally:
        stop_service(proc, log)

    summary = service_summary(log)  # the service's own totals
    duplicates_topic = len(read_topic(kafka_bootstrap, topics["duplicates"]))
    print(f"\nservice summary: {summary}\nPromQL: {scraped_in:.0f} in, {scraped}, "
          f"{scraped_replayed:.0f} replayed, {scraped_e2e:.0f} end-to-end latencies, "
          f"{lag_series} lag series; dashboard and alert expressions: {len(queries)}, "
          f"without a series: {missing}")
    assert scraped_in == summary["records"] == len(lines)
    assert scraped["unique"] == summary["unique"]
    assert scraped["exact"] + scraped["near"] == summary["duplicates"] == duplicates_topic
    assert scraped["dead_letter"] == summary["dead_letters"] == 30
    assert scraped_replayed == summary["replayed"]
    assert scraped_commit_errors == summary["refused_commits"]
    # One latency per acknowledged output: unique + duplicates + dead letters.
    assert scraped_e2e == summary["unique"] + summary["duplicates"] + summary["dead_letters"]
    assert lag_series == 3, "one lag series per input partition"
    # And what the broker holds agrees with both.
    assert len(read_topic(kafka_bootstrap, topics["output"])) == scraped["unique"]
    assert len(read_topic(kafka_bootstrap, topics["dead"])) == scraped["dead_letter"]
    assert not missing, "expressions that found no series: " + "; ".join(
        f"{what}: {expr}" for what, expr in missing)
    assert len(rules) == len(alert_rules())
    assert all(r["health"] == "ok" for r in rules), [(r["name"], r.get("lastError"))
                                                     for r in rules]
