"""promtool on the deploy files: the alert rules parse and their unit tests pass (each alert
fires on a series that should fire it, stays quiet otherwise), the compose Prometheus config is
valid, and the metrics the program exposes pass promtool's naming lint."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import service_unavailable
from prometheus_client import CollectorRegistry, generate_latest

from stream_dedup.config import Settings
from stream_dedup.engine.batch import Engine
from stream_dedup.engine.stored import TABLES
from stream_dedup.ops.metrics import ServiceMetrics
from stream_dedup.records import Message
from stream_dedup.state import MemoryStore

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        service_unavailable("promtool is not installed (apt-get install --no-install-recommends "
                            "prometheus; deploy/test.sh does it)")
    return path


def run(args: list[str], stdin: bytes | None = None, cwd: Path = REPO) -> str:
    proc = subprocess.run(args, input=stdin, capture_output=True, cwd=cwd, timeout=60,
                          check=False)
    out = (proc.stdout + proc.stderr).decode()
    assert proc.returncode == 0, out
    return out


def test_alert_rules_are_valid(promtool) -> None:
    out = run([promtool, "check", "rules", "deploy/prometheus/alerts.yml"])
    assert "SUCCESS: 6 rules found" in out


def test_alert_rule_unit_tests_pass(promtool) -> None:
    out = run([promtool, "test", "rules", "alerts_test.yml"], cwd=REPO / "tests" / "rules")
    assert "SUCCESS" in out


def test_every_alert_has_a_unit_test(promtool) -> None:
    import yaml

    rules = yaml.safe_load((REPO / "deploy/prometheus/alerts.yml").read_text())
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"]}
    tests = yaml.safe_load((REPO / "tests/rules/alerts_test.yml").read_text())["tests"]
    firing = {t["alertname"] for case in tests for t in case["alert_rule_test"]
              if t["exp_alerts"]}
    assert alerts == firing


def test_compose_prometheus_config_is_valid(promtool) -> None:
    out = run([promtool, "check", "config", "deploy/prometheus/prometheus.yml"])
    assert "is valid prometheus config file syntax" in out


def test_exposed_metrics_pass_the_naming_lint(promtool) -> None:
    s = Settings()
    s = dataclasses.replace(s, state=dataclasses.replace(s.state, backend="memory"))
    engine = Engine(s, MemoryStore(TABLES))
    registry = CollectorRegistry()
    metrics = ServiceMetrics(registry, s, topics=["in"])
    metrics.observe_batch(engine, engine.process([Message("a", "今天天气很好", 1)]), 1,
                          {"in": 2}, [0.1])
    metrics.set_lag({("in", 0): 3})
    out = run([promtool, "check", "metrics"], stdin=generate_latest(registry))
    assert out.strip() == "", out
