"""ServiceMetrics on a fresh registry per test, driven by a real engine (in-memory state), read
back with `get_sample_value`."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from stream_dedup.config import Settings
from stream_dedup.engine.batch import STAGES, Engine
from stream_dedup.engine.stored import TABLES
from stream_dedup.ops.metrics import ERROR_KINDS, VERDICTS, ServiceMetrics
from stream_dedup.records import Message
from stream_dedup.state import MemoryStore

pytestmark = pytest.mark.unit

TEXT = "今天的天气真的非常好我们去公园散步吧"
NEAR = "今天的天气真的非常好，我们一起去公园散步吧！"
OTHER = "深市今天上涨了百分之三大家都很开心"


class Clock:
    """A hand-moved monotonic clock."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def settings() -> Settings:
    s = Settings()
    return dataclasses.replace(s, state=dataclasses.replace(s.state, backend="memory"),
                               window=dataclasses.replace(s.window, seconds=60.0))


def value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def test_nothing_is_registered_at_import_or_on_the_default_registry(settings) -> None:
    before = set(REGISTRY._names_to_collectors)
    ServiceMetrics(CollectorRegistry(), settings)
    assert set(REGISTRY._names_to_collectors) == before
    assert not any(n.startswith("stream_dedup") for n in before)


def test_known_labels_start_at_zero(settings) -> None:
    r = CollectorRegistry()
    ServiceMetrics(r, settings, topics=["in-a", "in-b"])
    for topic in ("in-a", "in-b"):
        assert value(r, "stream_dedup_messages_in_total", topic=topic) == 0
    for verdict in VERDICTS:
        assert value(r, "stream_dedup_verdicts_total", verdict=verdict) == 0
    for kind in ERROR_KINDS:
        assert value(r, "stream_dedup_errors_total", kind=kind) == 0
    for stage in STAGES:
        assert value(r, "stream_dedup_stage_duration_seconds_count", stage=stage) == 0
    assert value(r, "stream_dedup_build_info", version="0.1.0",
                 python_version=__import__("platform").python_version()) == 1
    assert value(r, "stream_dedup_bloom_target_false_positive_ratio") == 0.01
    assert value(r, "stream_dedup_index_design_entries") == 500.0 * 60.0
    assert value(r, "process_resident_memory_bytes") is not None


def test_a_batch_is_counted_from_its_verdicts_and_the_engine_totals(settings) -> None:
    r = CollectorRegistry()
    engine = Engine(settings, MemoryStore(TABLES))
    m = ServiceMetrics(r, settings, topics=["in"])
    batch = [Message("a", TEXT, 1_000), Message("b", TEXT, 2_000), Message("c", NEAR, 3_000),
             Message("d", OTHER, 4_000), Message("a", TEXT, 1_000)]
    verdicts = engine.process(batch)
    m.observe_batch(engine, verdicts, dead_letters=2, topic_counts={"in": 7},
                    e2e_latencies_s=[0.02, 0.3, 4.0])

    decided = Counter(v.decision.value for v in verdicts)  # near or not is the engine's call
    assert decided["exact"] == 1 and verdicts[4].replayed
    assert value(r, "stream_dedup_messages_in_total", topic="in") == 7
    for verdict in ("unique", "exact", "near"):
        assert value(r, "stream_dedup_verdicts_total", verdict=verdict) == decided[verdict]
    assert value(r, "stream_dedup_verdicts_total", verdict="dead_letter") == 2
    assert value(r, "stream_dedup_replayed_total") == 1
    assert value(r, "stream_dedup_dedup_ratio") == pytest.approx(
        (decided["exact"] + decided["near"]) / 5)
    assert value(r, "stream_dedup_index_entries") == 4  # the replayed id is stored once
    assert value(r, "stream_dedup_candidates_total") == engine.stats.candidates
    for stage in STAGES:
        assert value(r, "stream_dedup_stage_duration_seconds_count", stage=stage) == 1
        assert value(r, "stream_dedup_stage_duration_seconds_sum", stage=stage) == \
            pytest.approx(engine.stats.stage_seconds[stage])
    assert value(r, "stream_dedup_end_to_end_latency_seconds_count") == 3
    assert value(r, "stream_dedup_end_to_end_latency_seconds_bucket", le="0.5") == 2
    assert value(r, "stream_dedup_state_disk_bytes") == engine.store.disk_bytes()
    assert 0 < value(r, "stream_dedup_bloom_fill_ratio") < 0.01
    assert value(r, "stream_dedup_bloom_estimated_false_positive_ratio") == \
        engine.exact.bloom.estimated_fpr()


def test_entries_follow_expiry_and_resume_from_an_existing_state(settings) -> None:
    store = MemoryStore(TABLES)
    engine = Engine(settings, store)
    engine.process([Message(f"m{i}", f"{OTHER}{i}号", 1_000 + i) for i in range(5)])
    # A new process on the same state: the entries already there are counted once.
    r = CollectorRegistry()
    engine = Engine(settings, store)
    m = ServiceMetrics(r, settings)
    later = 1_000 + 61_000  # one window later: the five first messages expire
    verdicts = engine.process([Message("n1", TEXT, later), Message("n2", NEAR, later + 1)])
    m.observe_batch(engine, verdicts)
    assert value(r, "stream_dedup_expired_entries_total") == 5
    assert value(r, "stream_dedup_index_entries") == 2
    verdicts = engine.process([Message("n3", TEXT + "吗", later + 2)])
    m.observe_batch(engine, verdicts)
    assert value(r, "stream_dedup_index_entries") == 3
    assert value(r, "stream_dedup_expired_entries_total") == 5


def test_dedup_ratio_is_over_the_sliding_window_only(settings) -> None:
    r = CollectorRegistry()
    clock = Clock()
    engine = Engine(settings, MemoryStore(TABLES))
    m = ServiceMetrics(r, settings, clock=clock)
    dups = engine.process([Message("a", TEXT, 1), Message("b", TEXT, 2)])
    m.observe_batch(engine, dups)
    assert value(r, "stream_dedup_dedup_ratio") == 0.5
    clock.now += settings.metrics.dedup_window_s + 1
    fresh = engine.process([Message("c", OTHER, 3), Message("d", "明天上午十点在三楼会议室开会讨论预算", 4)])
    m.observe_batch(engine, fresh)
    assert value(r, "stream_dedup_dedup_ratio") == 0.0


def test_state_gauges_are_refreshed_at_most_every_state_every_s(settings) -> None:
    r = CollectorRegistry()
    clock = Clock()
    engine = Engine(settings, MemoryStore(TABLES))
    m = ServiceMetrics(r, settings, state_every_s=15.0, clock=clock)
    m.observe_batch(engine, engine.process([Message("a", TEXT, 1)]))
    first = value(r, "stream_dedup_state_disk_bytes")
    m.observe_batch(engine, engine.process([Message("b", OTHER, 2)]))
    assert value(r, "stream_dedup_state_disk_bytes") == first
    clock.now += 15.0
    m.observe_batch(engine, engine.process([Message("c", NEAR, 3)]))
    assert value(r, "stream_dedup_state_disk_bytes") == engine.store.disk_bytes() > first


def test_lag_keeps_only_the_partitions_owned_now(settings) -> None:
    r = CollectorRegistry()
    m = ServiceMetrics(r, settings)
    m.set_lag({("in", 0): 5, ("in", 1): 7})
    m.set_lag({("in", 1): 2, ("in", 2): 0})
    assert value(r, "stream_dedup_consumer_lag_records", topic="in", partition="0") is None
    assert value(r, "stream_dedup_consumer_lag_records", topic="in", partition="1") == 2
    assert value(r, "stream_dedup_consumer_lag_records", topic="in", partition="2") == 0


def test_errors_are_counted_by_a_known_kind_only(settings) -> None:
    r = CollectorRegistry()
    m = ServiceMetrics(r, settings)
    m.count_error("commit")
    m.count_error("commit")
    assert value(r, "stream_dedup_errors_total", kind="commit") == 2
    with pytest.raises(ValueError, match="produce, commit, broker"):
        m.count_error("timeout on partition 3")


def test_textfile_is_valid_exposition_and_written_at_most_every_every_s(settings,
                                                                        tmp_path) -> None:
    r = CollectorRegistry()
    clock = Clock()
    engine = Engine(settings, MemoryStore(TABLES))
    m = ServiceMetrics(r, settings, topics=["file"], process_metrics=False, clock=clock)
    m.observe_batch(engine, engine.process([Message("a", TEXT, 1)]), topic_counts={"file": 1})
    path = tmp_path / "stream_dedup.prom"
    assert m.write_textfile(path, every_s=10.0)
    m.observe_batch(engine, engine.process([Message("b", TEXT, 2)]), topic_counts={"file": 1})
    assert not m.write_textfile(path, every_s=10.0)
    families = {f.name: f for f in text_string_to_metric_families(path.read_text())}
    assert families["stream_dedup_messages_in"].samples[0].value == 1
    assert not any(name.startswith("process_") for name in families)
    clock.now += 10.0
    assert m.write_textfile(path, every_s=10.0)
    families = {f.name: f for f in text_string_to_metric_families(path.read_text())}
    assert families["stream_dedup_messages_in"].samples[0].value == 2
