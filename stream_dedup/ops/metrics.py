"""Prometheus metrics of stream-dedup, on a registry the caller passes in.

Nothing is registered at import: `ServiceMetrics(registry, settings)` builds every family on the
given `CollectorRegistry`, so tests use a fresh registry each and a process builds exactly one.
Names follow Prometheus conventions: the `stream_dedup_` prefix, base units (seconds, bytes,
ratios in 0..1), `_total` on counters, and labels with bounded values only (topic, partition,
verdict, stage, error kind; never an id or a text). Label values known in advance are created at
start, so a counter that stays at zero is a series at zero, not a missing one (alerts on
"no messages in" need that).

Cost on the hot path: `observe_batch` does a few dictionary updates and one histogram observation
per output; the state gauges (Bloom fill and FPR, bytes on disk) read the whole filter and walk
the state directory, so they are refreshed at most every `state_every_s` seconds.
"""

from __future__ import annotations

import platform
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, Histogram, Info, write_to_textfile
from prometheus_client import Counter as PromCounter
from prometheus_client.process_collector import ProcessCollector

from .. import __version__
from ..config import Settings
from ..engine.batch import STAGES, Engine
from ..records import Verdict
from .health import MetricsServer, ReadyCheck, WsgiApp, serve

VERDICTS = ("unique", "exact", "near", "dead_letter")
ERROR_KINDS = ("produce", "commit", "broker", "dead_letter")
# A batch's time in one stage: from sub-millisecond (exact) to seconds (a large verify).
STAGE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                 10.0)
# Message timestamp to acknowledged output: milliseconds when keeping up, minutes when behind.
E2E_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0)


class ServiceMetrics:
    """Every metric of one stream-dedup process, and the calls that update them.

    `process_metrics` adds prometheus-client's `process_*` (CPU, memory, open files); file mode
    leaves them out of its textfile because node-exporter reports its own under those names and
    refuses a textfile that repeats them.

    The service calls, per batch: `observe_batch` after the outputs are acknowledged, `set_lag`
    after a commit, `count_error` where a produce, commit or broker call failed. File mode calls
    `observe_batch` per batch and `write_textfile`. `serve` exposes them over HTTP.
    """

    def __init__(self, registry: CollectorRegistry, settings: Settings,
                 topics: Sequence[str] = (), state_every_s: float = 15.0,
                 process_metrics: bool = True, clock: Callable[[], float] = time.monotonic) -> None:
        self.registry = registry
        self._clock = clock
        self._state_every_s = state_every_s
        self._state_at = float("-inf")
        self._dedup_window_s = settings.metrics.dedup_window_s
        self._window: deque[tuple[float, int, int]] = deque()  # (time, decided, duplicates)
        self._window_sums = [0, 0]
        self._seen_stage_s = dict.fromkeys(STAGES, 0.0)
        self._seen_expired = 0
        self._seen_candidates = 0
        self._entries: int | None = None
        self._lag_owned: set[tuple[str, int]] = set()
        self.inspector: WsgiApp | None = None  # served under /inspect when set (`serve`)
        self._textfile_at = float("-inf")
        self._define(registry, self._dedup_window_s)
        for topic in topics:
            self.messages_in.labels(topic)
        self.index_design_entries.set(settings.exact.expected_rate_per_s * settings.window.seconds)
        self.bloom_target_fpr.set(settings.exact.false_positive_rate)
        if process_metrics:
            ProcessCollector(registry=registry)

    def _define(self, r: CollectorRegistry, window_s: float) -> None:
        p = "stream_dedup_"
        register_build_info(r)
        self.messages_in = PromCounter(
            f"{p}messages_in_total", "Records read, before decoding, by input topic",
            ["topic"], registry=r)
        self.verdicts = PromCounter(
            f"{p}verdicts_total", "Records decided: unique, exact or near duplicate, or "
            "dead letter (could not be read); replayed records count again", ["verdict"],
            registry=r)
        self.replayed = PromCounter(
            f"{p}replayed_total", "Records whose id was seen before: given their first verdict "
            "again", registry=r)
        self.dedup_ratio = Gauge(
            f"{p}dedup_ratio", f"Share of the decided messages of the last {window_s:g} s that "
            "were duplicates (exact or near)", registry=r)
        self.stage_seconds = Histogram(
            f"{p}stage_duration_seconds", "Time one batch spent in each engine stage",
            ["stage"], buckets=STAGE_BUCKETS, registry=r)
        self.e2e_seconds = Histogram(
            f"{p}end_to_end_latency_seconds", "From a message's timestamp to its output "
            "acknowledged by the broker", buckets=E2E_BUCKETS, registry=r)
        self.lag = Gauge(
            f"{p}consumer_lag_records", "Records in the partition after this consumer's "
            "position (high watermark - position)", ["topic", "partition"], registry=r)
        self.bloom_fill = Gauge(
            f"{p}bloom_fill_ratio", "Set bits / bits of the Bloom generation being written "
            "(about 0.5 at the end of a generation at design load)", registry=r)
        self.bloom_fpr = Gauge(
            f"{p}bloom_estimated_false_positive_ratio", "False-positive rate implied by the fill "
            "of the live Bloom generations", registry=r)
        self.bloom_target_fpr = Gauge(
            f"{p}bloom_target_false_positive_ratio", "The configured target "
            "(exact.false_positive_rate)", registry=r)
        self.index_entries = Gauge(
            f"{p}index_entries", "Messages held in the state (within the window)", registry=r)
        self.index_design_entries = Gauge(
            f"{p}index_design_entries", "Messages the window is sized for: "
            "exact.expected_rate_per_s x window.seconds", registry=r)
        self.state_bytes = Gauge(
            f"{p}state_disk_bytes", "Bytes of the state directory on disk", registry=r)
        self.expired = PromCounter(
            f"{p}expired_entries_total", "Messages removed from the state because they left the "
            "window", registry=r)
        self.candidates = PromCounter(
            f"{p}candidates_total", "Near-duplicate candidates the index proposed", registry=r)
        self.errors = PromCounter(
            f"{p}errors_total", "Failed calls: produce (a delivery attempt), commit (refused "
            "by the group), broker (a failed poll, any retried request), dead_letter (a cut dead "
            "letter the broker refused: skipped)", ["kind"], registry=r)
        for v in VERDICTS:
            self.verdicts.labels(v)
        for s in STAGES:
            self.stage_seconds.labels(s)
        for k in ERROR_KINDS:
            self.errors.labels(k)

    # -- the calls of the service and of file mode ------------------------------------------

    def observe_batch(self, engine: Engine, verdicts: Sequence[Verdict], dead_letters: int = 0,
                      topic_counts: Mapping[str, int] | None = None,
                      e2e_latencies_s: Iterable[float] = ()) -> None:
        """Count one batch: call it after `engine.process` returned `verdicts` (and, in the
        service, after its outputs were acknowledged). `topic_counts` is records read per topic
        (dead letters included); `e2e_latencies_s` one value per acknowledged output."""
        for topic, n in (topic_counts or {}).items():
            self.messages_in.labels(topic).inc(n)
        kinds = Counter(v.decision.value for v in verdicts)
        for kind, n in kinds.items():
            self.verdicts.labels(kind).inc(n)
        if dead_letters:
            self.verdicts.labels("dead_letter").inc(dead_letters)
        replayed = sum(v.replayed for v in verdicts)
        self.replayed.inc(replayed)
        for latency in e2e_latencies_s:
            self.e2e_seconds.observe(latency)
        self._observe_engine(engine, len(verdicts) - replayed)
        self._slide(len(verdicts), kinds["exact"] + kinds["near"])
        if self._clock() - self._state_at >= self._state_every_s:
            self.refresh_state(engine)

    def set_lag(self, partition_lags: Mapping[tuple[str, int], int]) -> None:
        """Lag of every partition this consumer owns now; partitions it no longer owns vanish."""
        for topic, partition in self._lag_owned - partition_lags.keys():
            self.lag.remove(topic, str(partition))
        for (topic, partition), lag in partition_lags.items():
            self.lag.labels(topic, str(partition)).set(lag)
        self._lag_owned = set(partition_lags)

    def count_error(self, kind: str) -> None:
        """One failed call of `kind` (produce, commit or broker)."""
        if kind not in ERROR_KINDS:
            raise ValueError(f"error kind {kind!r} is not one of {', '.join(ERROR_KINDS)}")
        self.errors.labels(kind).inc()

    def refresh_state(self, engine: Engine) -> None:
        """Read the Bloom filter and the state directory now (observe_batch does it at most
        every `state_every_s`; call it before a last `write_textfile`)."""
        self._state_at = self._clock()
        bloom = engine.exact.bloom
        self.bloom_fill.set(bloom.fill_ratio())
        self.bloom_fpr.set(bloom.estimated_fpr())
        self.state_bytes.set(engine.store.disk_bytes())

    def serve(self, port: int, address: str = "0.0.0.0",
              ready_check: ReadyCheck | None = None, **security: Any) -> MetricsServer:
        """`/metrics`, `/healthz` and `/readyz` on one port, from a daemon thread (`security`:
        `tls` and `basic_auth` of `health.serve`), and `inspector` under `/inspect` when set."""
        return serve(self.registry, port, address, ready_check, inspector=self.inspector,
                     **security)

    def write_textfile(self, path: str | Path, every_s: float = 0.0) -> bool:
        """Write every metric to `path` for node-exporter's textfile collector (atomically:
        a temporary file renamed over it), unless the last write is less than `every_s` old.
        Returns whether it wrote."""
        now = self._clock()
        if now - self._textfile_at < every_s:
            return False
        self._textfile_at = now
        write_to_textfile(str(path), self.registry)
        return True

    # -- internals ----------------------------------------------------------------------------

    def _observe_engine(self, engine: Engine, stored: int) -> None:
        """Stage times, expiry and candidates as deltas of the engine's running totals."""
        stats = engine.stats
        for stage in STAGES:
            spent = stats.stage_seconds[stage]
            self.stage_seconds.labels(stage).observe(spent - self._seen_stage_s[stage])
            self._seen_stage_s[stage] = spent
        expired = stats.expired - self._seen_expired
        self._seen_expired = stats.expired
        self.expired.inc(expired)
        self.candidates.inc(stats.candidates - self._seen_candidates)
        self._seen_candidates = stats.candidates
        if self._entries is None:
            # Once per process: what an earlier run left in the state (one key scan), minus
            # this batch's own changes, which are counted below.
            self._entries = engine.stored_messages() - stored + expired
        self._entries += stored - expired
        self.index_entries.set(self._entries)

    def _slide(self, decided: int, duplicates: int) -> None:
        now = self._clock()
        window, sums = self._window, self._window_sums
        window.append((now, decided, duplicates))
        sums[0] += decided
        sums[1] += duplicates
        while window and window[0][0] < now - self._dedup_window_s:
            _, d, u = window.popleft()
            sums[0] -= d
            sums[1] -= u
        if sums[0]:
            self.dedup_ratio.set(sums[1] / sums[0])


def register_build_info(registry: CollectorRegistry) -> None:
    """`stream_dedup_build_info`: what runs (every process kind exposes it)."""
    Info("stream_dedup_build", "Version of stream-dedup and of Python", registry=registry).info(
        {"version": __version__, "python_version": platform.python_version()})

