"""`stream-dedup run`: wire the engine, the consumer and the producer into the service, with
signal handling, and run it until SIGTERM or SIGINT."""

from __future__ import annotations

import logging
import signal
from types import FrameType

from ..config import Settings
from ..engine import Engine
from ..state import open_store
from .retry import Backoff, Shutdown, Throttle
from .service import Service, ServiceStats
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


def serve(settings: Settings, state_path: str | None = None) -> ServiceStats:
    """Run the service in this (main) thread until SIGTERM/SIGINT; returns its totals."""
    k = settings.kafka
    shutdown = Shutdown(k.shutdown_timeout_s)

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("%s received: finishing the batch, then stopping", signal.Signals(signum).name)
        shutdown.request()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        backoff = Backoff(k.retry_backoff_s, k.retry_backoff_max_s, shutdown.expired)
        st = settings.state
        engine = Engine(settings, open_store(st.backend, state_path or st.path,
                                             st.block_cache_mb, st.sync_writes))
        try:
            source = KafkaSource(k, backoff)
            sink = KafkaSink(k, backoff)
        except BaseException:
            engine.close()
            raise
        service = Service(settings, engine, source, sink, shutdown)
        try:
            service.check_topics()
        except BaseException:
            service.close()
            raise
        log.info("running state=%s inputs=%s output=%s duplicates=%s dead_letters=%s",
                 state_path or st.path, ",".join(k.input_topics), k.output_topic,
                 k.duplicates_topic, k.dead_letter_topic)
        return service.run()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
