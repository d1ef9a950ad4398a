"""`stream-dedup run`: wire the engine, the consumer, the producer, the metrics and the
metrics port (`/metrics`, `/healthz`, `/readyz`) into the service, with signal handling, and run it
until SIGTERM or SIGINT."""

from __future__ import annotations

import logging
import signal
import ssl
from types import FrameType
from typing import Any, Protocol

from kafka.consumer.subscription_state import ConsumerRebalanceListener
from prometheus_client import CollectorRegistry

from ..config import MetricsSettings, Settings
from ..engine import open_engine
from ..engine_process import EngineProcess
from ..errors import ConfigError, ServiceError
from ..health import MetricsServer, Readiness, ReadyCheck, tls_context
from ..metrics import ServiceMetrics
from ..scale.partitioned import open_partitioned
from ..secret import read_secret
from .observe import BROKER_REACHABLE, CONDITIONS, STATE_OPEN
from .retry import Backoff, Shutdown, Throttle
from .service import Decider, Service, ServiceStats
from .sink import KafkaSink
from .source import KafkaSource

log = logging.getLogger(__name__)


def quiet_kafka_logs() -> None:
    """kafka-python says every connection step at INFO and every failed connection at ERROR;
    keep its warnings and errors, and of those one line per message template every 30 s while a
    broker restarts. (A filter on the handlers: records of child loggers such as
    kafka.net.connection never pass through a filter set on the "kafka" logger.)"""
    logging.getLogger("kafka").setLevel(logging.WARNING)
    throttle = Throttle(30.0)

    def only_kafka(record: logging.LogRecord) -> bool:
        return not record.name.startswith("kafka.") or throttle.filter(record)

    for handler in logging.getLogger().handlers:
        handler.addFilter(only_kafka)


def metrics_url(m: MetricsSettings, port: int | None = None) -> str:
    """Where a person or a scraper on this machine reads the metrics of `stream-dedup run`."""
    host = "127.0.0.1" if m.address in ("0.0.0.0", "", "::") else m.address
    host = f"[{host}]" if ":" in host else host
    scheme = "https" if m.tls_certfile else "http"
    return f"{scheme}://{host}:{port or m.port}/metrics"


def metrics_security(m: MetricsSettings) -> dict[str, Any]:
    """`tls` and `basic_auth` for `health.serve` from the metrics settings (secrets read now)."""
    out: dict[str, Any] = {}
    if m.tls_certfile and m.tls_keyfile:
        try:
            out["tls"] = tls_context(m.tls_certfile, m.tls_keyfile)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError("metrics.tls_certfile", f"cannot load the certificate and key: "
                              f"{getattr(exc, 'strerror', None) or exc}",
                              "a PEM certificate and its unencrypted PEM key") from None
    if m.basic_auth_user:
        out["basic_auth"] = (m.basic_auth_user, read_secret(
            "metrics.basic_auth_password_env", m.basic_auth_password_env,
            "metrics.basic_auth_password_file", m.basic_auth_password_file))
        if "tls" not in out and m.address not in ("127.0.0.1", "localhost", "::1"):
            log.warning("metrics basic auth without TLS on %s: the password crosses the network "
                        "in clear; set metrics.tls_certfile and metrics.tls_keyfile", m.address)
    return out


class ServesMetrics(Protocol):
    """What the metrics port needs: `ServiceMetrics` of `run`, `StageMetrics` of the stages."""

    def serve(self, port: int, address: str = "0.0.0.0", ready_check: ReadyCheck | None = None,
              **security: Any) -> MetricsServer: ...


def start_metrics_port(metrics: ServesMetrics, m: MetricsSettings,
                       ready: Readiness) -> MetricsServer | None:
    """The HTTP server of the metrics port, or None when `metrics.port` is 0."""
    if not m.port:
        log.info("metrics port off (metrics.port is 0)")
        return None
    try:
        server = metrics.serve(m.port, m.address, ready, **metrics_security(m))
    except OSError as exc:
        raise ServiceError(f"cannot serve the metrics on {m.address}:{m.port}: {exc} (set "
                           "metrics.port to a free port, or 0 for none)") from exc
    log.info("metrics url=%s health=/healthz ready=/readyz tls=%s basic_auth=%s",
             metrics_url(m, server.port), bool(m.tls_certfile), bool(m.basic_auth_user))
    return server


def open_decider(settings: Settings, root: str,
                 backoff: Backoff) -> tuple[Decider, ConsumerRebalanceListener | None]:
    """The engine of `scale.scope` and the rebalance listener it needs: one engine over every
    partition (`process`; in a child process with `engine.process: child`), or one per
    partition restored from its changelog (`key`)."""
    scope = settings.scale.scope
    if scope == "global":
        raise ConfigError("scale.scope", "'global' runs as three stages, not as `run`",
                          "process or key for `stream-dedup run`")
    if scope == "key":
        engines = open_partitioned(settings, root, backoff)
        return engines, engines
    if settings.engine.process == "child":
        return EngineProcess(settings, root), None
    return open_engine(settings, root), None


def serve(settings: Settings, state_path: str | None = None) -> ServiceStats:
    """Run the service in this (main) thread until SIGTERM/SIGINT; returns its totals."""
    k = settings.kafka
    shutdown = Shutdown(k.shutdown_timeout_s)

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("%s received: finishing the batch, then stopping", signal.Signals(signum).name)
        shutdown.request()

    metrics = ServiceMetrics(CollectorRegistry(), settings, topics=k.input_topics)
    ready = Readiness(*CONDITIONS)

    def on_retry(what: str, exc: BaseException) -> None:
        metrics.count_error("broker")
        ready.set(BROKER_REACHABLE, False, f"{what} failed: {exc}")

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    server = None
    try:
        server = start_metrics_port(metrics, settings.metrics, ready)
        backoff = Backoff(k.retry_backoff_s, k.retry_backoff_max_s, shutdown.expired,
                          on_retry=on_retry)
        st = settings.state
        engine, listener = open_decider(settings, state_path or st.path, backoff)
        ready.set(STATE_OPEN, True)
        try:
            source = KafkaSource(k, backoff, metrics, ready, listener)
            sink = KafkaSink(k, backoff, metrics, ready)
        except BaseException:
            engine.close()
            raise
        service = Service(settings, engine, source, sink, shutdown, metrics, ready)
        try:
            service.check_topics()
        except BaseException:
            service.close()
            raise
        log.info("running state=%s inputs=%s output=%s duplicates=%s dead_letters=%s scope=%s%s",
                 state_path or st.path, ",".join(k.input_topics), k.output_topic,
                 k.duplicates_topic, k.dead_letter_topic, settings.scale.scope,
                 f" engine={settings.engine.process}" if settings.scale.scope == "process"
                 else "")
        return service.run()
    finally:
        if server is not None:
            server.close()
        for s, handler in previous.items():
            signal.signal(s, handler)
