"""The metrics port (`health.serve`) over real HTTP on 127.0.0.1, and the log formats."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Counter
from prometheus_client.parser import text_string_to_metric_families

from stream_dedup.ops.health import MetricsServer, Readiness, serve

pytestmark = pytest.mark.unit


def get(server: MetricsServer, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}{path}", timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture
def registry() -> CollectorRegistry:
    r = CollectorRegistry()
    Counter("stream_dedup_things_total", "Things", registry=r).inc(3)
    return r


@pytest.fixture
def readiness() -> Readiness:
    return Readiness("state open", "partitions assigned")


@pytest.fixture
def server(registry, readiness) -> Iterator[MetricsServer]:
    s = serve(registry, 0, "127.0.0.1", readiness)
    yield s
    s.close()


def test_metrics_healthz_and_404_on_one_port(server) -> None:
    status, body = get(server, "/metrics")
    assert status == 200
    samples = {s.name: s.value for f in text_string_to_metric_families(body) for s in f.samples}
    assert samples["stream_dedup_things_total"] == 3
    assert get(server, "/healthz") == (200, "ok\n")
    status, body = get(server, "/nope")
    assert status == 404 and "/metrics" in body


def test_readyz_says_which_conditions_fail_until_all_hold(server, readiness) -> None:
    assert get(server, "/readyz") == (503, "state open: not yet\npartitions assigned: not yet\n")
    readiness.set("state open", True)
    readiness.set("partitions assigned", False, "no partitions after the rebalance")
    assert get(server, "/readyz") == (503, "partitions assigned: no partitions after the "
                                           "rebalance\n")
    readiness.set("partitions assigned", True)
    assert get(server, "/readyz") == (200, "ready\n")


def test_unknown_readiness_condition_is_an_error(readiness) -> None:
    with pytest.raises(KeyError):
        readiness.set("broker reachable", True)


def test_close_releases_the_port(registry) -> None:
    first = serve(registry, 0, "127.0.0.1")
    port = first.port
    first.close()
    again = serve(registry, port, "127.0.0.1")
    try:
        assert get(again, "/readyz") == (200, "ready\n")  # no check given: always ready
    finally:
        again.close()
