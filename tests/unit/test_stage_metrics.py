"""The metrics of a `stream-dedup stage` process (`scale/stage_metrics.py`) on a fresh registry per
test, and the index shards' entry count (`index_stage.EntryCount`) against the store itself."""

from __future__ import annotations

import base64
import dataclasses
import platform
import socket
import urllib.request
from urllib.error import HTTPError

import pytest
from prometheus_client import CollectorRegistry

from stream_dedup import __version__
from stream_dedup.config import MetricsSettings, Settings, WindowSettings
from stream_dedup.engine.stored import TABLES
from stream_dedup.kafka.reporting import BROKER_REACHABLE, PARTITIONS_ASSIGNED
from stream_dedup.kafka.route import Output
from stream_dedup.ops.health import Readiness
from stream_dedup.ops.metrics import ERROR_KINDS
from stream_dedup.runtime.lifecycle import start_metrics_port
from stream_dedup.scale.index_stage import ENTRY_FAMILIES
from stream_dedup.scale.join import Join
from stream_dedup.scale.probes import ANCHOR, BLOCK, EXACT, LOOKUP, Answer, Hit, Original, Probe
from stream_dedup.scale.restore import RestoreReport
from stream_dedup.scale.shard import Shard
from stream_dedup.scale.stage_metrics import (
    CONDITIONS,
    KINDS,
    LOOP_RUNNING,
    STATE_RESTORED,
    KeyCount,
    StageMetrics,
)
from stream_dedup.state import MemoryStore

pytestmark = pytest.mark.unit
P = "stream_dedup_global_"


def value(r: CollectorRegistry, name: str, **labels: str) -> float | None:
    """A sample of `stream_dedup_global_<name>`, or of `run`'s own name for the shared ones."""
    shared = name.startswith(("consumer_lag_records", "errors_total"))
    return r.get_sample_value(("stream_dedup_" if shared else P) + name, labels)


def _metrics(stage: str, topics: tuple[str, ...] = ("in",)
             ) -> tuple[CollectorRegistry, StageMetrics]:
    r = CollectorRegistry()
    return r, StageMetrics(r, Settings(), stage, topics, process_metrics=False)


def _original(message_id: str, probes: int) -> Original:
    return Original(message_id, 5, "文本", 7, probes, (0, 0, 0), "in", 1, 9, 5, None, b"{}", ())


def _out(kind: str) -> Output:
    return Output(kind, "t", None, b"", [], 0)


@pytest.mark.parametrize("stage", sorted(KINDS))
def test_known_series_start_at_zero_and_only_the_stage_has_its_gauges(stage: str) -> None:
    r, _ = _metrics(stage)
    ins, outs = KINDS[stage]
    for kind in ins:
        assert value(r, "records_in_total", stage=stage, kind=kind) == 0
    for kind in outs:
        assert value(r, "records_out_total", stage=stage, kind=kind) == 0
    for kind in ERROR_KINDS:
        assert value(r, "errors_total", stage=stage, kind=kind) == 0
    assert value(r, "partitions_served", stage=stage, topic="in") == 0
    assert value(r, "batch_duration_seconds_count", stage=stage) == 0
    assert value(r, "changelog_records_total", stage=stage) == 0
    assert r.get_sample_value("stream_dedup_build_info", {
        "version": __version__, "python_version": platform.python_version()}) == 1
    assert (value(r, "index_entries") is not None) == (stage == "index")
    assert (value(r, "pending_joins") is not None) == (stage == "decide")


def test_an_unknown_stage_is_refused() -> None:
    with pytest.raises(ValueError, match="stage 'merge' is not one of"):
        _metrics("merge")


def test_a_batch_counts_records_in_by_topic_kind_and_out_by_output_kind() -> None:
    s = Settings()
    t = s.topology
    r, m = _metrics("decide", topics=(t.originals_topic, t.answers_topic))
    m.observe_batch_done({t.originals_topic: 3, t.answers_topic: 5},
                         [_out("unique"), _out("duplicate"), _out("unique")], 0.2, 7)
    m.observe_batch_done({t.answers_topic: 1}, [], 0.01, 0)
    assert value(r, "records_in_total", stage="decide", kind="originals") == 3
    assert value(r, "records_in_total", stage="decide", kind="answers") == 6
    assert value(r, "records_out_total", stage="decide", kind="output") == 2
    assert value(r, "records_out_total", stage="decide", kind="duplicates") == 1
    assert value(r, "batch_duration_seconds_count", stage="decide") == 2
    assert value(r, "batch_duration_seconds_sum", stage="decide") == pytest.approx(0.21)
    assert value(r, "changelog_records_total", stage="decide") == 7


def test_fingerprint_input_topics_are_kind_input() -> None:
    r, m = _metrics("fingerprint", topics=("feed-a", "feed-b"))
    m.observe_batch_done({"feed-a": 2, "feed-b": 1},
                         [_out("probes"), _out("original"), _out("dead_letter")], 0.1, 0)
    assert value(r, "records_in_total", stage="fingerprint", kind="input") == 3
    for kind in ("probes", "originals", "dead_letters"):
        assert value(r, "records_out_total", stage="fingerprint", kind=kind) == 1


def test_partitions_restores_and_lag_follow_what_is_owned_now() -> None:
    r, m = _metrics("index", topics=("probes",))
    m.set_partitions({("probes", 0), ("probes", 3)})
    m.set_restores({0: RestoreReport(120, 0.5, 900, 120), 3: RestoreReport(0, 0.01, 0, 0)})
    m.set_lag({("probes", 0): 4, ("probes", 3): 0})
    assert value(r, "partitions_served", stage="index", topic="probes") == 2
    assert value(r, "restore_records", stage="index", partition="0") == 120
    assert value(r, "restore_seconds", stage="index", partition="0") == 0.5
    assert value(r, "consumer_lag_records", stage="index", topic="probes", partition="0") == 4
    m.set_partitions(set())
    m.set_restores({3: RestoreReport(0, 0.01, 0, 0)})
    m.set_lag({("probes", 3): 2})
    assert value(r, "partitions_served", stage="index", topic="probes") == 0
    assert value(r, "restore_records", stage="index", partition="0") is None
    assert value(r, "restore_records", stage="index", partition="3") == 0
    assert value(r, "consumer_lag_records", stage="index", topic="probes", partition="0") is None
    assert value(r, "consumer_lag_records", stage="index", topic="probes", partition="3") == 2


def test_errors_count_by_kind_and_an_unknown_kind_is_a_bug() -> None:
    r, m = _metrics("fingerprint")
    m.count_error("broker")
    m.count_error("broker")
    m.count_error("commit")
    assert value(r, "errors_total", stage="fingerprint", kind="broker") == 2
    assert value(r, "errors_total", stage="fingerprint", kind="commit") == 1
    with pytest.raises(ValueError, match="error kind 'disk'"):
        m.count_error("disk")


def test_state_gauges_are_set_by_name() -> None:
    r, m = _metrics("decide")
    m.set_state({"pending_joins": 3})
    assert value(r, "pending_joins") == 3
    with pytest.raises(KeyError):
        m.set_state({"index_entries": 1})  # not a gauge of decide


def test_the_port_serves_metrics_and_readiness_as_run_does() -> None:
    _, m = _metrics("index")
    ready = Readiness(*CONDITIONS)
    server = m.serve(0, "127.0.0.1", ready)
    base = f"http://127.0.0.1:{server.port}"
    try:
        with urllib.request.urlopen(base + "/healthz", timeout=10) as resp:
            assert resp.status == 200
        with pytest.raises(HTTPError) as not_ready:
            urllib.request.urlopen(base + "/readyz", timeout=10)
        assert not_ready.value.code == 503
        assert "state restored: not yet" in not_ready.value.read().decode()
        for condition in (LOOP_RUNNING, BROKER_REACHABLE, PARTITIONS_ASSIGNED, STATE_RESTORED):
            ready.set(condition, True)
        with urllib.request.urlopen(base + "/readyz", timeout=10) as resp:
            assert resp.status == 200
        with urllib.request.urlopen(base + "/metrics", timeout=10) as resp:
            assert f'{P}index_entries 0.0' in resp.read().decode()
    finally:
        server.close()


def test_a_stage_port_is_started_from_metrics_settings_with_basic_auth(monkeypatch) -> None:
    """The stage loop starts its port with `run`'s `start_metrics_port`: the same settings,
    the same security."""
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    monkeypatch.setenv("STAGE_METRICS_PASSWORD", "s3cret")
    settings = MetricsSettings(port=port, basic_auth_user="prom",
                               basic_auth_password_env="STAGE_METRICS_PASSWORD")
    _, m = _metrics("fingerprint")
    server = start_metrics_port(m, settings, Readiness(*CONDITIONS))
    assert server is not None and server.port == port
    base = f"http://127.0.0.1:{port}"
    try:
        with urllib.request.urlopen(base + "/healthz", timeout=10) as resp:
            assert resp.status == 200  # open for liveness probes
        with pytest.raises(HTTPError) as refused:
            urllib.request.urlopen(base + "/metrics", timeout=10)
        assert refused.value.code == 401
        token = base64.b64encode(b"prom:s3cret").decode()
        request = urllib.request.Request(base + "/metrics",
                                         headers={"Authorization": f"Basic {token}"})
        with urllib.request.urlopen(request, timeout=10) as resp:
            assert 'stream_dedup_global_records_in_total{kind="input",stage="fingerprint"}' \
                in resp.read().decode()
    finally:
        server.close()
    assert start_metrics_port(m, MetricsSettings(port=0), Readiness(*CONDITIONS)) is None


def _keys(store: MemoryStore, families: tuple[str, ...] = ENTRY_FAMILIES) -> int:
    return sum(1 for cf in families for _ in store.scan(cf, b"", b"\xff" * 64))


def test_index_entry_count_follows_inserts_replays_and_expiry() -> None:
    s = dataclasses.replace(Settings(), window=WindowSettings(seconds=10.0))
    store = MemoryStore(TABLES)
    counted = KeyCount(store, ENTRY_FAMILIES, check=False)
    shard = Shard(counted, s)
    batch = [Probe(EXACT, 0, 1, 1_000, "a", 0), Probe(BLOCK, 0, 2, 1_000, "a", 1, 5, "甲"),
             Probe(ANCHOR, 0, 3, 1_000, "a", 2, 5, "甲"), Probe(LOOKUP, 0, 3, 1_000, "a", 3)]
    shard.answer(batch)
    shard.answer(batch)  # replayed: answered again, nothing stored twice
    assert counted.keys == _keys(store) == 4
    shard.answer([Probe(EXACT, 0, 1, 2_000, "b", 0)])
    assert counted.keys == _keys(store) == 5
    shard.answer([Probe(EXACT, 0, 9, 100_000, "c", 0)])  # the sweep expires the first five
    assert counted.keys == _keys(store) == 1
    assert KeyCount(store, ENTRY_FAMILIES, check=False).keys == 1  # reopened: counted by a scan


def test_pending_joins_count_rewrites_and_decided_messages() -> None:
    store = MemoryStore(TABLES)
    counted = KeyCount(store, ("docs",), check=True)
    join = Join(counted, Settings())
    exact = Answer("m2", 0, EXACT, (Hit("m1", 1, 0, -1, ""),))
    none = Answer("m2", 1, BLOCK, ())
    join.add([], [exact, Answer("m3", 0, EXACT, ())])  # two messages open
    assert counted.keys == _keys(store, ("docs",)) == 2
    join.add([_original("m2", 2)], [exact])  # m2 rewritten: still two
    assert counted.keys == _keys(store, ("docs",)) == 2
    join.add([], [none])  # m2 decided, its pending doc deleted
    assert counted.keys == _keys(store, ("docs",)) == 1
    assert KeyCount(store, ("docs",), check=True).keys == 1
