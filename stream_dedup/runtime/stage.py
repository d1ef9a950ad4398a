"""The loop the three stages of `scope: global` share (`scale/` holds the stages).

`stream-dedup stage fingerprint|index|decide` runs one member of that stage's consumer group
(`kafka.group_id` + `-` + the stage). Per batch, in this order (the order is the delivery
guarantee, as in the service):

1. Poll a batch of the stage's input topics.
   (Before the first poll the stage is started: its changelog topic created if missing, its
   producer connected, its flushes and restores given the loop's backoff.)
2. Follow the assignment: state of partitions this member lost is closed; state of partitions it
   gained is restored from its changelog (in full, or after a clean stop of this member only
   the records since its checkpoint) before any record of them is handled.
   Records of partitions it does not serve are neither handled nor committed (their owner, or
   this member after the next rebalance, reads them again). The fingerprint stage may keep
   records back for a later batch (`merge.py`); those are not committed either.
3. Handle: the stage's work; its state writes are applied locally and sent to the changelog.
   An output its topic cannot take becomes a dead letter cut to fit, as in the service
   (`kafka.oversize.fit_all`; the limits are read from the topics at start).
4. Wait until the broker acknowledged the changelog records.
5. Deliver the outputs and wait for their acknowledgements.
6. Commit the input offsets.

A crash anywhere replays the uncommitted batch: the index shards answer a replayed probe as the
first time, the decide stage gives a replayed original its first verdict (at-least-once, never
lost, never a duplicate of itself).

Like `stream-dedup run`, the process serves `/metrics`, `/healthz` and `/readyz` on
`metrics.port` (`lifecycle.start_metrics_port`: TLS, basic auth; 0 for none). The loop counts
each batch once its input is committed (`scale.stage_metrics.StageMetrics`) and keeps the readiness
conditions of `stage_metrics.CONDITIONS`: "state restored" is false while `own` restores partitions.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Protocol

from prometheus_client import CollectorRegistry

from ..config import KafkaSettings, Settings
from ..kafka.oversize import fit_all
from ..kafka.retry import Backoff, GaveUp, stopped_how
from ..kafka.route import InputRecord, Output, next_offsets
from ..kafka.sink import KafkaSink
from ..kafka.source import KafkaSource
from ..ops.health import Readiness
from ..scale.restore import RestoreReport
from ..scale.stage_metrics import CONDITIONS, LOOP_RUNNING, STATE_RESTORED, StageMetrics
from .lifecycle import Lifecycle, close_all, lifecycle, require_topics

log = logging.getLogger(__name__)
PROGRESS_EVERY_S = 30.0


class Stage(Protocol):
    """One stage's work; `topics` are what it consumes, `outputs` what it writes."""

    name: str
    topics: tuple[str, ...]
    outputs: tuple[str, ...]
    poll_batch_size: int

    def start(self, backoff: Backoff) -> None:
        """Connect the stage's state to the broker; `backoff` (the loop's) retries changelog
        flushes and restores while the broker is away, as the outputs are retried."""
        ...

    def own(self, partitions: set[tuple[str, int]]) -> set[tuple[str, int]]:
        """Follow the assignment; returns the partitions served (their records handled)."""
        ...

    def release(self, records: Sequence[InputRecord], served: set[tuple[str, int]],
                caught_up: set[tuple[str, int]]) -> list[InputRecord]:
        """The records to handle now (the rest, if any, are kept for a later batch)."""
        ...

    def handle(self, records: Sequence[InputRecord]) -> list[Output]: ...

    def flush(self, timeout_s: float) -> int:
        """Wait for the changelog's acknowledgements; returns the records acknowledged."""
        ...

    def restored(self) -> Mapping[int, RestoreReport]:
        """The last restore of each partition number whose state is open."""
        ...

    def gauges(self) -> Mapping[str, float]:
        """The stage's state gauges (`stage_metrics.STATE_GAUGES`) by name."""
        ...

    def close(self) -> None: ...


def stage_kafka(settings: Settings, stage: Stage) -> KafkaSettings:
    """The kafka settings of one stage's consumer group."""
    k = settings.kafka
    return dataclasses.replace(k, input_topics=stage.topics, group_id=f"{k.group_id}-{stage.name}",
                               client_id=f"{k.client_id}-{stage.name}",
                               poll_batch_size=stage.poll_batch_size)


class StageLoop:
    """One stage's consumer, producer and counts between its start and its stop."""

    def __init__(self, stage: Stage, k: KafkaSettings, metrics: StageMetrics, ready: Readiness,
                 life: Lifecycle) -> None:
        self.stage = stage
        self.k = k
        self.metrics = metrics
        self.ready = ready
        self.life = life
        self.source: KafkaSource | None = None
        self.sink: KafkaSink | None = None
        self.owned: set[tuple[str, int]] | None = None
        self.limits: Mapping[str, int] = {}  # bytes a record of each output topic may take
        self.handled = self.batches = 0
        self.started = self.last = time.monotonic()

    def start(self) -> tuple[KafkaSource, KafkaSink]:
        """Connect the consumer and the producer, check the topics, start the stage's state."""
        k, stage, backoff = self.k, self.stage, self.life.backoff
        self.source = source = KafkaSource(k, backoff, self.metrics, self.ready)
        self.sink = sink = KafkaSink(k, backoff, self.metrics, self.ready)
        outputs = list(dict.fromkeys((*stage.outputs, k.dead_letter_topic)))
        require_topics(k, {*k.input_topics, *outputs}, source.topics(),
                       "same --config, scale.scope: global")
        self.limits = sink.prepare(outputs)
        stage.start(backoff)
        log.info("running stage=%s group=%s topics=%s", stage.name, k.group_id,
                 ",".join(k.input_topics))
        self.ready.set(LOOP_RUNNING, True)
        return source, sink

    def step(self, source: KafkaSource, sink: KafkaSink) -> None:
        """One batch through the six steps of the module docstring."""
        stage, metrics = self.stage, self.metrics
        records = source.poll()  # 1.
        served, changed = self._follow(source)  # 2.
        records = [r for r in records if (r.topic, r.partition) in served]
        lags = source.lags()
        metrics.set_lag(lags)
        caught_up = {tp for tp, lag in lags.items() if lag == 0}
        records = stage.release(records, served, caught_up)
        if records:
            began = time.monotonic()
            outputs = fit_all(stage.handle(records), self.limits, self.k.dead_letter_topic)  # 3.
            acknowledged = stage.flush(self.k.commit_timeout_s)  # 4.
            sink.deliver(outputs)  # 5.
            if not source.commit(next_offsets(records)):  # 6.
                metrics.count_error("commit")
            metrics.observe_batch_done(Counter(r.topic for r in records), outputs,
                                       time.monotonic() - began, acknowledged)
            self.handled += len(records)
            self.batches += 1
        if records or changed:
            metrics.set_state(stage.gauges())

    def _follow(self, source: KafkaSource) -> tuple[set[tuple[str, int]], bool]:
        """Have the stage own the partitions assigned now; returns those it serves and whether
        the assignment changed (then "state restored" is false while it restores)."""
        assigned = {(tp.topic, tp.partition) for tp in source.consumer.assignment()}
        changed = assigned != self.owned
        if changed:
            self.ready.set(STATE_RESTORED, False, f"restoring the state of {len(assigned)} "
                           "assigned partitions")
        served = self.stage.own(assigned)
        if changed:
            self.owned = assigned
            self.ready.set(STATE_RESTORED, True)
            self.metrics.set_partitions(served)
            self.metrics.set_restores(self.stage.restored())
        return served, changed

    def progress(self) -> None:
        """A log line of running totals every `PROGRESS_EVERY_S`."""
        if time.monotonic() - self.last >= PROGRESS_EVERY_S:
            self.last = time.monotonic()
            log.info("progress stage=%s records=%d batches=%d elapsed_s=%.0f", self.stage.name,
                     self.handled, self.batches, self.last - self.started)

    def close(self) -> None:
        """Close the consumer, the producer and the stage's state, each even if one fails."""
        self.ready.set(LOOP_RUNNING, False, "the stage is stopping")
        close_all([("consumer", self.source and self.source.close),
                   ("producer", self.sink and self.sink.close), ("state", self.stage.close)])


def run_stage(settings: Settings, stage: Stage) -> int:
    """Run `stage` until SIGTERM/SIGINT, serving its metrics port (`metrics.*`, as `run`);
    returns the records it handled."""
    k = stage_kafka(settings, stage)
    metrics = StageMetrics(CollectorRegistry(), settings, stage.name, k.input_topics)
    ready = Readiness(*CONDITIONS)
    with lifecycle(k, settings.metrics, metrics, ready) as life:
        loop = StageLoop(stage, k, metrics, ready, life)
        try:
            source, sink = loop.start()
            life.shutdown.running()
            while not life.shutdown.requested:
                loop.step(source, sink)
                loop.progress()
        except GaveUp as exc:
            log.warning("%s (%s): the last batch will be replayed", stopped_how(exc), exc)
        finally:
            loop.close()
    log.info("stopped stage=%s records=%d batches=%d elapsed_s=%.0f", stage.name,
             loop.handled, loop.batches, time.monotonic() - loop.started)
    return loop.handled
