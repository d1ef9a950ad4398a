"""`stream-dedup run`: wire the engine, the consumer, the producer and the metrics into the
service, inside the lifecycle (signals, backoff, metrics port `/metrics`, `/healthz`, `/readyz`),
and run it until SIGTERM or SIGINT."""

from __future__ import annotations

import logging

from kafka.consumer.subscription_state import ConsumerRebalanceListener
from prometheus_client import CollectorRegistry

from ..config import Settings
from ..engine.batch import open_engine
from ..errors import ConfigError
from ..kafka.reporting import CONDITIONS, STATE_OPEN
from ..kafka.retry import Backoff, GaveUp
from ..kafka.sink import KafkaSink
from ..kafka.source import KafkaSource
from ..kafka.transaction import ChangelogProducer, TransactionalSink, transactional_id
from ..ops.health import Readiness
from ..ops.inspector.app import Inspector
from ..ops.metrics import ServiceMetrics
from ..ops.recent import RecentVerdicts
from ..scale.partitioned import open_partitioned
from .contracts import Decider, ServiceStats
from .engine_process import EngineProcess
from .lifecycle import close_all, lifecycle
from .service import Service
from .state_space import OutlastsFullDisk

log = logging.getLogger(__name__)


def open_decider(settings: Settings, root: str, backoff: Backoff,
                 changelog: ChangelogProducer | None = None
                 ) -> tuple[Decider, ConsumerRebalanceListener | None]:
    """The engine of `scale.scope` and the rebalance listener it needs: one engine over every
    partition (`process`; in a child process with `engine.process: child`), which waits out a
    full state disk until a stop is asked (`state_space`), or one per partition restored from its
    changelog (`key`; its records written by `changelog`, the transactional sink's producer
    under exactly_once, else a producer of their own)."""
    scope = settings.scale.scope
    if scope == "global":
        raise ConfigError("scale.scope", "'global' runs as three stages, not as `run`",
                          "process or key for `stream-dedup run`")
    if scope == "key":
        engines = open_partitioned(settings, root, backoff, changelog)
        return engines, engines
    if settings.engine.process == "child":
        return OutlastsFullDisk(lambda: EngineProcess(settings, root), backoff), None
    return OutlastsFullDisk(lambda: open_engine(settings, root), backoff), None


def _stopped_starting(exc: GaveUp) -> ServiceStats:
    """A stop requested while the service was still starting (a broker away) is one line and a
    clean exit: nothing was read, nothing is lost."""
    log.warning("stopped on request before the service ran (%s)", exc)
    return ServiceStats()


def inspector_ring(settings: Settings) -> RecentVerdicts | None:
    """The ring of recent verdicts the inspector shows, when `metrics.inspector` is on."""
    m = settings.metrics
    if not m.inspector:
        return None
    return RecentVerdicts(m.inspector_verdicts, m.inspector_unique_every)


def serve(settings: Settings, state_path: str | None = None) -> ServiceStats:
    """Run the service in this (main) thread until SIGTERM/SIGINT; returns its totals."""
    k = settings.kafka
    metrics = ServiceMetrics(CollectorRegistry(), settings, topics=k.input_topics)
    recent = inspector_ring(settings)
    if recent is not None:
        metrics.inspector = Inspector(settings, recent)
    ready = Readiness(*CONDITIONS)
    with lifecycle(k, settings.metrics, metrics, ready) as life:
        st = settings.state
        root = state_path or st.path
        # Under exactly_once the sink's producer also writes `key`'s changelog, so it comes
        # first; otherwise the consumer connects first and says at once what refuses it.
        sink: KafkaSink | None = None
        if k.guarantee == "exactly_once":
            try:
                sink = TransactionalSink(k, life.backoff, transactional_id(k, root), metrics,
                                         ready)
            except GaveUp as exc:
                return _stopped_starting(exc)
        try:
            engine, listener = open_decider(
                settings, root, life.backoff,
                sink.changelog_producer() if isinstance(sink, TransactionalSink) else None)
        except BaseException:
            if sink is not None:
                sink.close()
            raise
        ready.set(STATE_OPEN, True)
        try:
            source = KafkaSource(k, life.backoff, metrics, ready, listener)
            if sink is None:
                sink = KafkaSink(k, life.backoff, metrics, ready)
        except BaseException as exc:
            close_all([("engine", engine.close),
                       ("producer", sink.close if sink is not None else lambda: None)])
            if isinstance(exc, GaveUp):
                return _stopped_starting(exc)
            raise
        service = Service(settings, engine, source, sink, life.shutdown, metrics, ready, recent)
        try:
            service.check_topics()
        except BaseException as exc:
            service.close()
            if isinstance(exc, GaveUp):
                return _stopped_starting(exc)
            raise
        life.shutdown.running()
        log.info("running state=%s inputs=%s output=%s duplicates=%s dead_letters=%s "
                 "guarantee=%s scope=%s%s", root, ",".join(k.input_topics),
                 k.output_topic, k.duplicates_topic, k.dead_letter_topic, k.guarantee,
                 settings.scale.scope,
                 f" engine={settings.engine.process}" if settings.scale.scope == "process"
                 else "")
        return service.run()
