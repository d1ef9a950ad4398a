"""The loop the three stages of `scope: global` share, and their partition state.

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
4. Wait until the broker acknowledged the changelog records.
5. Deliver the outputs and wait for their acknowledgements.
6. Commit the input offsets.

A crash anywhere replays the uncommitted batch: the index shards answer a replayed probe as the
first time, the decide stage gives a replayed original its first verdict (at-least-once, never
lost, never a duplicate of itself).

Like `stream-dedup run`, the process serves `/metrics`, `/healthz` and `/readyz` on
`metrics.port` (`kafka.run.start_metrics_port`: TLS, basic auth; 0 for none). The loop counts
each batch once its input is committed (`observe.StageMetrics`) and keeps the readiness
conditions of `observe.CONDITIONS`: "state restored" is false while `own` restores partitions.
"""

from __future__ import annotations

import dataclasses
import logging
import signal
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Generic, Protocol, TypeVar

from kafka import KafkaProducer
from prometheus_client import CollectorRegistry

from ..config import KafkaSettings, Settings
from ..errors import ConfigError, ServiceError
from ..health import Readiness
from ..kafka.observe import BROKER_REACHABLE
from ..kafka.retry import Backoff, GaveUp, Shutdown
from ..kafka.route import InputRecord, Output, next_offsets
from ..kafka.run import start_metrics_port
from ..kafka.sink import KafkaSink
from ..kafka.source import KafkaSource
from ..state import KVStore
from .changelog import (
    ChangelogStore,
    RestoreReport,
    changelog_producer,
    ensure_changelog_topics,
    open_state,
)
from .observe import CONDITIONS, LOOP_RUNNING, STATE_RESTORED, StageMetrics

log = logging.getLogger(__name__)
PROGRESS_EVERY_S = 30.0
T = TypeVar("T")


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
        """The stage's state gauges (`observe.STATE_GAUGES`) by name."""
        ...

    def close(self) -> None: ...


class PartitionStates(Generic[T]):
    """Per owned partition number: a RocksDB store under `state.path`/<stage>-<n>, mirrored to
    the stage's compacted changelog topic (`changelog.open_state`: restored in full, or only
    the records after the checkpoint a clean stop left), and the stage's object `make(store)`
    over it. A partition given away is detached first, so it leaves no checkpoint behind.
    Nothing touches the broker before `start`."""

    def __init__(self, settings: Settings, stage: str, topic: str, partitions: int,
                 make: Callable[[KVStore], T]) -> None:
        self._settings = settings
        self._stage = stage
        self.topic = settings.scale.changelog_for(f"{settings.kafka.group_id}-{stage}", topic)
        self._partitions = partitions
        self._make = make
        self._producer: KafkaProducer | None = None
        self._backoff: Backoff | None = None
        self._stores: dict[int, ChangelogStore] = {}
        self.states: dict[int, T] = {}
        self.reports: dict[int, RestoreReport] = {}

    def start(self, backoff: Backoff) -> None:
        """Create the changelog topic if missing and connect its producer; every partition
        opened from now on restores and flushes with `backoff` (a broker blip is waited out,
        not an exit: `changelog.ChangelogStore.flush`)."""
        sc = self._settings.scale
        ensure_changelog_topics(self._settings.kafka, {self.topic: self._partitions},
                                sc.changelog_max_record_bytes)
        self._producer = changelog_producer(self._settings.kafka, sc.changelog_max_record_bytes)
        self._backoff = backoff

    def own(self, numbers: set[int]) -> None:
        """Close what is no longer owned; restore and open what is newly owned."""
        for n in sorted(set(self._stores) - numbers):
            store = self._stores.pop(n)
            store.detach()
            store.close()
            del self.states[n]
            del self.reports[n]
            log.info("state closed stage=%s partition=%d", self._stage, n)
        for n in sorted(numbers - set(self._stores)):
            self._open(n)

    def _open(self, n: int) -> None:
        if self._producer is None:
            raise RuntimeError(f"stage {self._stage}: partition {n} opened before start()")
        path = Path(self._settings.state.path) / f"{self._stage}-{n}"
        store, report = open_state(self._settings, str(path), self._producer, self.topic, n,
                                   self._backoff)
        log.info("state restored stage=%s partition=%d records=%d bytes=%d seconds=%.2f",
                 self._stage, n, report.records, report.bytes, report.seconds)
        self._stores[n] = store
        self.states[n] = self._make(store)
        self.reports[n] = report

    def flush(self, timeout_s: float) -> int:
        """Wait for the broker's acknowledgement of every changelog record sent; returns how
        many it acknowledged (the offsets the owned changelog partitions moved by)."""
        before = sum(store.end_offset for store in self._stores.values())
        for store in self._stores.values():
            store.flush(timeout_s)
        return sum(store.end_offset for store in self._stores.values()) - before

    def close(self) -> None:
        for store in self._stores.values():
            store.close()
        self._stores.clear()
        self.states.clear()
        self.reports.clear()
        if self._producer is not None:
            self._producer.close()


def stage_kafka(settings: Settings, stage: Stage) -> KafkaSettings:
    """The kafka settings of one stage's consumer group."""
    k = settings.kafka
    return dataclasses.replace(k, input_topics=stage.topics, group_id=f"{k.group_id}-{stage.name}",
                               client_id=f"{k.client_id}-{stage.name}",
                               poll_batch_size=stage.poll_batch_size)


def check_scope(settings: Settings) -> None:
    """The stages serve `scale.scope: global` only (a config for another scope is a mistake)."""
    if settings.scale.scope != "global":
        raise ConfigError("scale.scope", f"is {settings.scale.scope}; the stages serve the "
                          "global scope", "global")


def run_stage(settings: Settings, stage: Stage) -> int:
    """Run `stage` until SIGTERM/SIGINT, serving its metrics port (`metrics.*`, as `run`);
    returns the records it handled."""
    k = stage_kafka(settings, stage)
    shutdown = Shutdown(k.shutdown_timeout_s)

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("%s received: finishing the batch, then stopping", signal.Signals(signum).name)
        shutdown.request()

    metrics = StageMetrics(CollectorRegistry(), settings, stage.name, k.input_topics)
    ready = Readiness(*CONDITIONS)

    def on_retry(what: str, exc: BaseException) -> None:
        metrics.count_error("broker")
        ready.set(BROKER_REACHABLE, False, f"{what} failed: {exc}")

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    backoff = Backoff(k.retry_backoff_s, k.retry_backoff_max_s, shutdown.expired,
                      on_retry=on_retry)
    handled = batches = 0
    started = last = time.monotonic()
    source = sink = server = None
    try:
        server = start_metrics_port(metrics, settings.metrics, ready)
        source = KafkaSource(k, backoff, metrics, ready)
        sink = KafkaSink(k, backoff, metrics, ready)
        missing = sorted({*k.input_topics, *stage.outputs} - source.topics())
        if missing:
            raise ServiceError(f"topic(s) {', '.join(missing)} do not exist on "
                               f"{k.bootstrap_servers}: create them with `stream-dedup topics "
                               "create` (same --config, scale.scope: global)")
        sink.prepare(stage.outputs)
        stage.start(backoff)
        log.info("running stage=%s group=%s topics=%s", stage.name, k.group_id,
                 ",".join(k.input_topics))
        ready.set(LOOP_RUNNING, True)
        owned: set[tuple[str, int]] | None = None
        while not shutdown.requested:
            records = source.poll()  # 1.
            assigned = {(tp.topic, tp.partition) for tp in source.consumer.assignment()}
            changed = assigned != owned
            if changed:
                ready.set(STATE_RESTORED, False, f"restoring the state of {len(assigned)} "
                          "assigned partitions")
            served = stage.own(assigned)  # 2.
            if changed:
                owned = assigned
                ready.set(STATE_RESTORED, True)
                metrics.set_partitions(served)
                metrics.set_restores(stage.restored())
            records = [r for r in records if (r.topic, r.partition) in served]
            lags = source.lags()
            metrics.set_lag(lags)
            caught_up = {tp for tp, lag in lags.items() if lag == 0}
            records = stage.release(records, served, caught_up)
            if records:
                began = time.monotonic()
                outputs = stage.handle(records)  # 3.
                acknowledged = stage.flush(k.commit_timeout_s)  # 4.
                sink.deliver(outputs)  # 5.
                if not source.commit(next_offsets(records)):  # 6.
                    metrics.count_error("commit")
                metrics.observe_batch_done(Counter(r.topic for r in records), outputs,
                                           time.monotonic() - began, acknowledged)
                handled += len(records)
                batches += 1
            if records or changed:
                metrics.set_state(stage.gauges())
            if time.monotonic() - last >= PROGRESS_EVERY_S:
                last = time.monotonic()
                log.info("progress stage=%s records=%d batches=%d elapsed_s=%.0f", stage.name,
                         handled, batches, last - started)
    except GaveUp as exc:
        log.warning("shutdown time ran out (%s): the last batch will be replayed", exc)
    finally:
        ready.set(LOOP_RUNNING, False, "the stage is stopping")
        for what, close in (("consumer", source and source.close),
                            ("producer", sink and sink.close), ("state", stage.close),
                            ("metrics port", server and server.close)):
            if close is None:
                continue
            try:
                close()
            except Exception as exc:
                log.warning("closing the %s failed: %s", what, exc)
        for s, handler in previous.items():
            signal.signal(s, handler)
    log.info("stopped stage=%s records=%d batches=%d elapsed_s=%.0f", stage.name, handled,
             batches, time.monotonic() - started)
    return handled
