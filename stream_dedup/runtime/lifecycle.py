"""The lifecycle every long-running command shares (`stream-dedup run` and each stage of
`scope: global`): stop on SIGTERM/SIGINT, retry the broker with a backoff that marks it
unreachable, serve the metrics port, refuse to start without the configured topics, and close
every part even when one of them fails."""

from __future__ import annotations

import logging
import signal
import ssl
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any, Protocol

from ..config import KafkaSettings, MetricsSettings
from ..errors import ConfigError, ServiceError
from ..kafka.reporting import BROKER_REACHABLE
from ..kafka.retry import Backoff, Shutdown, Throttle
from ..kafka.security import WATCH
from ..ops.health import MetricsServer, Readiness, ReadyCheck, tls_context
from ..ops.secret import read_secret

log = logging.getLogger(__name__)


def quiet_kafka_logs() -> None:
    """kafka-python says every connection step at INFO and every failed connection at ERROR;
    keep its warnings and errors, and of those one line per message template every 30 s while a
    broker restarts, each without a traceback (kafka-python logs one for a connection reset
    by a broker going away, an expected failure). While a client connects they are held
    (`security.WATCH`), and dropped when the connection failed: the service says why in one
    line of its own.
    (A filter on the handlers: records of child loggers such as kafka.net.connection never pass
    through a filter set on the "kafka" logger.)"""
    logging.getLogger("kafka").setLevel(logging.WARNING)
    throttle = Throttle(30.0)

    def only_kafka(record: logging.LogRecord) -> bool:
        if not record.name.startswith("kafka."):
            return True
        decided = getattr(record, "kafka_passes", None)  # asked once per handler
        if decided is not None:
            return decided
        if record.exc_info and record.exc_info[1] is not None:  # a connection reset, say:
            exc = record.exc_info[1]  # one line, not a traceback
            record.msg = f"{record.getMessage()}: {type(exc).__name__}: {exc}"
            record.args, record.exc_info, record.exc_text = (), None, None
        record.kafka_passes = not WATCH.holds(record) and throttle.filter(record)
        return record.kafka_passes

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
    """What the lifecycle needs of the metrics: `ServiceMetrics` of `run`, `StageMetrics` of the
    stages."""

    def count_error(self, kind: str) -> None: ...

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


def require_topics(k: KafkaSettings, wanted: Collection[str], existing: Collection[str],
                   how: str = "same --config") -> None:
    """Fail at start, naming them, when topics the process reads or writes do not exist (the
    producer would otherwise block on them batch after batch)."""
    missing = sorted(set(wanted) - set(existing))
    if missing:
        raise ServiceError(f"topic(s) {', '.join(missing)} do not exist on "
                           f"{k.bootstrap_servers}: create them with `stream-dedup topics "
                           f"create` ({how})")


def close_all(parts: Sequence[tuple[str, Callable[[], None] | None]]) -> Exception | None:
    """Close each part in order (None: never opened), even when an earlier one fails; each
    failure is logged, the first one returned."""
    first: Exception | None = None
    for what, close in parts:
        if close is None:
            continue
        try:
            close()
        except Exception as exc:
            log.warning("closing the %s failed: %s", what, exc)
            first = first or exc
    return first


@contextmanager
def stop_on_signals(shutdown: Shutdown) -> Iterator[None]:
    """SIGTERM and SIGINT request `shutdown` (the batch finishes, then the loop stops) while
    the block runs; the previous handlers are restored after it."""

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("%s received: finishing the batch, then stopping", signal.Signals(signum).name)
        shutdown.request()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@dataclass(frozen=True, slots=True)
class Lifecycle:
    """What a running process hands to its loop: the stop request and the broker backoff."""

    shutdown: Shutdown
    backoff: Backoff


@contextmanager
def lifecycle(k: KafkaSettings, m: MetricsSettings, metrics: ServesMetrics,
              ready: Readiness) -> Iterator[Lifecycle]:
    """Signals, backoff and metrics port around a process's run: a failed broker call counts a
    "broker" error and clears "broker reachable" until the next success."""
    shutdown = Shutdown(k.shutdown_timeout_s, running=False)  # `running()` once started

    def on_retry(what: str, exc: BaseException) -> None:
        metrics.count_error("broker")
        ready.set(BROKER_REACHABLE, False, f"{what} failed: {exc}")

    with stop_on_signals(shutdown):
        backoff = Backoff(k.retry_backoff_s, k.retry_backoff_max_s, shutdown.expired,
                          on_retry=on_retry, stopping=lambda: shutdown.requested)
        server = start_metrics_port(metrics, m, ready)
        try:
            yield Lifecycle(shutdown, backoff)
        finally:
            close_all([("metrics port", server and server.close)])
