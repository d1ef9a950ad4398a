"""Prometheus metrics and readiness of one `stream-dedup stage` process (scope global).

One set of names for the three stages with a `stage` label (fingerprint, index, decide), rather
than names per stage: the same quantity (records in and out, batches, restores, lag, errors)
compares and sums across the pipeline with one expression (`sum by (stage) (rate(...))`), one
dashboard panel and one alert, and the label has three values. The `stream_dedup_global_`
prefix keeps them apart from the families of `stream-dedup run` (whose `stage` label of
`stream_dedup_stage_duration_seconds` names engine steps), except where the meaning is the same:
`stream_dedup_consumer_lag_records`, `stream_dedup_errors_total` and `stream_dedup_build_info`
keep `run`'s names (plus `stage`), so the lag alert and the lag and error panels cover the
stages as they are. What only one stage has gets its own name, registered by that stage only:
`stream_dedup_global_index_entries` (index), `stream_dedup_global_pending_joins` (decide).

Every update is made from the stage loop's thread; the metrics port's thread only reads.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, Histogram
from prometheus_client import Counter as PromCounter
from prometheus_client.process_collector import ProcessCollector

from ..config import Settings
from ..kafka.reporting import BROKER_REACHABLE, PARTITIONS_ASSIGNED, NullMeter
from ..kafka.route import Output
from ..ops.health import MetricsServer, ReadyCheck, serve
from ..ops.metrics import ERROR_KINDS, STAGE_BUCKETS, register_build_info
from ..state.store import KVStore, WriteSet
from .restore import RestoreReport

# The readiness conditions of a stage (`/readyz` lists the ones that do not hold).
LOOP_RUNNING = "loop running"
STATE_RESTORED = "state restored"
CONDITIONS = (LOOP_RUNNING, BROKER_REACHABLE, PARTITIONS_ASSIGNED, STATE_RESTORED)

# The `kind` label of records out, by `Output.kind`: the kind of topic they go to.
OUT_KINDS = {"probes": "probes", "original": "originals", "answers": "answers",
             "unique": "output", "duplicate": "duplicates", "dead_letter": "dead_letters"}
# Kinds each stage reads and writes (created at start, so a kind at zero is a series at zero).
KINDS = {"fingerprint": (("input",), ("probes", "originals", "dead_letters")),
         "index": (("probes",), ("answers",)),
         "decide": (("originals", "answers"), ("output", "duplicates"))}
# Gauges of one stage's state: name (after the prefix) and help.
STATE_GAUGES = {
    "index": {"index_entries": "Entries in the index shards this process owns (one per probe "
                               "stored, lookups included; expired ones removed)"},
    "decide": {"pending_joins": "Messages in the join partitions this process owns that wait "
                                "for their original or some of their answers"},
}
PREFIX = "stream_dedup_global_"
_AFTER_ALL = b"\xff" * 64  # after every key the stages write (the sweep's bound too)


def topic_kinds(settings: Settings) -> dict[str, str]:
    """The `kind` label of records in, by topic, for the staged topics (any other topic is
    one of `kafka.input_topics`: kind `input`)."""
    t = settings.topology
    return {t.probes_topic: "probes", t.originals_topic: "originals",
            t.answers_topic: "answers"}


class StageMetrics(NullMeter):
    """The metrics of one stage process, and the calls of its loop that update them.

    The source and sink report through `kafka.reporting.Meter`: of its calls `count_error` and
    `set_lag` count here; the engine's (`observe_batch`, `refresh_state`) stay no-ops.
    """

    def __init__(self, registry: CollectorRegistry, settings: Settings, stage: str,
                 topics: Iterable[str], process_metrics: bool = True) -> None:
        if stage not in KINDS:
            raise ValueError(f"stage {stage!r} is not one of {', '.join(KINDS)}")
        self.registry = registry
        self.stage = stage
        self._kind_of = topic_kinds(settings)
        self._lag_owned: set[tuple[str, int]] = set()
        self._restored: set[int] = set()
        self._topics = tuple(topics)
        self._define(registry, stage)
        ins, outs = KINDS[stage]
        for kind in ins:
            self.records_in.labels(stage, kind)
        for kind in outs:
            self.records_out.labels(stage, kind)
        for topic in self._topics:
            self.partitions.labels(stage, topic)
        for kind in ERROR_KINDS:
            self.errors.labels(stage, kind)
        self.batch_seconds.labels(stage)
        self.changelog.labels(stage)
        register_build_info(registry)
        if process_metrics:
            ProcessCollector(registry=registry)

    def _define(self, r: CollectorRegistry, stage: str) -> None:
        p = PREFIX
        self.records_in = PromCounter(
            f"{p}records_in_total", "Kafka records handled, by the kind of topic they came "
            "from (input, probes, originals, answers); a replayed record counts again",
            ["stage", "kind"], registry=r)
        self.records_out = PromCounter(
            f"{p}records_out_total", "Kafka records written and acknowledged, by the kind of "
            "topic (probes, originals, answers, output, duplicates, dead_letters)",
            ["stage", "kind"], registry=r)
        self.batch_seconds = Histogram(
            f"{p}batch_duration_seconds", "Time of one batch from handling to the commit of "
            "its input (its count is the batches)", ["stage"], buckets=STAGE_BUCKETS,
            registry=r)
        self.partitions = Gauge(
            f"{p}partitions_served", "Input partitions whose records this process handles now",
            ["stage", "topic"], registry=r)
        self.restore_records = Gauge(
            f"{p}restore_records", "Changelog records read when the state of this owned "
            "partition was last restored", ["stage", "partition"], registry=r)
        self.restore_seconds = Gauge(
            f"{p}restore_seconds", "Wall time of the last restore of this owned partition's "
            "state", ["stage", "partition"], registry=r)
        self.changelog = PromCounter(
            f"{p}changelog_records_total", "Changelog records the broker acknowledged (state "
            "writes of the owned partitions)", ["stage"], registry=r)
        self.lag = Gauge(
            "stream_dedup_consumer_lag_records", "Records in the partition after this consumer's "
            "position (high watermark - position)", ["stage", "topic", "partition"], registry=r)
        self.errors = PromCounter(
            "stream_dedup_errors_total", "Failed calls: produce (a delivery attempt), commit "
            "(refused by the group), broker (a failed poll, any retried request)",
            ["stage", "kind"], registry=r)
        self.state = {name: Gauge(f"{p}{name}", text, registry=r)
                      for name, text in STATE_GAUGES.get(stage, {}).items()}

    # -- the calls of the stage loop ----------------------------------------------------------

    def observe_batch_done(self, records_in: Mapping[str, int], outputs: Iterable[Output],
                           seconds: float, changelog_records: int) -> None:
        """One batch whose outputs and changelog records were acknowledged and whose input
        offsets were committed: `records_in` counts records by topic."""
        for topic, n in records_in.items():
            self.records_in.labels(self.stage, self._kind_of.get(topic, "input")).inc(n)
        for kind, n in Counter(OUT_KINDS[o.kind] for o in outputs).items():
            self.records_out.labels(self.stage, kind).inc(n)
        self.batch_seconds.labels(self.stage).observe(seconds)
        self.changelog.labels(self.stage).inc(changelog_records)

    def set_partitions(self, served: Iterable[tuple[str, int]]) -> None:
        """The partitions served now (every input topic is set, to 0 when none)."""
        counts = Counter(topic for topic, _ in served)
        for topic in self._topics:
            self.partitions.labels(self.stage, topic).set(counts.get(topic, 0))

    def set_restores(self, reports: Mapping[int, RestoreReport]) -> None:
        """The last restore of each partition whose state is open; others vanish."""
        for n in self._restored - reports.keys():
            self.restore_records.remove(self.stage, str(n))
            self.restore_seconds.remove(self.stage, str(n))
        for n, report in reports.items():
            self.restore_records.labels(self.stage, str(n)).set(report.records)
            self.restore_seconds.labels(self.stage, str(n)).set(report.seconds)
        self._restored = set(reports)

    def set_state(self, values: Mapping[str, float]) -> None:
        """The stage's state gauges (`STATE_GAUGES`), by name."""
        for name, value in values.items():
            self.state[name].set(value)

    # -- `kafka.reporting.Meter`, as the source and the sink call it -------------------------------

    def set_lag(self, partition_lags: Mapping[tuple[str, int], int]) -> None:
        """Lag of every partition this consumer owns now; partitions it no longer owns vanish."""
        for topic, partition in self._lag_owned - partition_lags.keys():
            self.lag.remove(self.stage, topic, str(partition))
        for (topic, partition), lag in partition_lags.items():
            self.lag.labels(self.stage, topic, str(partition)).set(lag)
        self._lag_owned = set(partition_lags)

    def count_error(self, kind: str) -> None:
        """One failed call of `kind` (produce, commit or broker)."""
        if kind not in ERROR_KINDS:
            raise ValueError(f"error kind {kind!r} is not one of {', '.join(ERROR_KINDS)}")
        self.errors.labels(self.stage, kind).inc()

    def serve(self, port: int, address: str = "0.0.0.0", ready_check: ReadyCheck | None = None,
              **security: Any) -> MetricsServer:
        """`/metrics`, `/healthz` and `/readyz` on one port (as `ServiceMetrics.serve`, so
        `runtime.lifecycle.start_metrics_port` starts it with the `metrics.*` settings)."""
        return serve(self.registry, port, address, ready_check, **security)


class KeyCount:
    """A `KVStore` that keeps the number of keys in `families`, so that a state gauge is read
    per batch without a scan; the count starts from one key scan of the opened state.

    `check`: look up the keys a write touches first (a put may replace a key, a delete may
    miss). Without it the caller promises that it puts only keys it does not hold and deletes
    only keys it holds, and counting costs nothing. Range deletes are not counted (the stages
    make none)."""

    def __init__(self, inner: KVStore, families: Sequence[str], check: bool) -> None:
        self.inner = inner
        self._families = frozenset(families)
        self._check = check
        self.keys = sum(1 for cf in families for _ in inner.scan(cf, b"", _AFTER_ALL))

    def get_many(self, cf: str, keys: Sequence[bytes]) -> list[bytes | None]:
        return self.inner.get_many(cf, keys)

    def scan(self, cf: str, start: bytes, end: bytes) -> Iterator[tuple[bytes, bytes]]:
        return self.inner.scan(cf, start, end)

    def write(self, writes: WriteSet) -> None:
        after = {(cf, key): value is not None for cf, key, value in writes.ops
                 if cf in self._families}  # the last write of a key decides
        if self._check:
            held = {cf: [k for c, k in after if c == cf] for cf, _ in after}
            before = {(cf, k): v is not None for cf, keys in held.items()
                      for k, v in zip(keys, self.inner.get_many(cf, keys), strict=True)}
            change = sum(present - before[k] for k, present in after.items())
        else:
            change = sum(1 if present else -1 for present in after.values())
        self.inner.write(writes)
        self.keys += change

    def disk_bytes(self) -> int:
        return self.inner.disk_bytes()

    def close(self) -> None:
        self.inner.close()
