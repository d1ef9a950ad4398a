"""The lifecycle the service and the stages share: topic checks, closing every part, signals,
and the broker backoff that marks the broker unreachable."""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest
from kafka.errors import KafkaConnectionError

from stream_dedup.config import KafkaSettings, MetricsSettings
from stream_dedup.errors import ServiceError
from stream_dedup.kafka.reporting import BROKER_REACHABLE, CONDITIONS
from stream_dedup.kafka.retry import Shutdown
from stream_dedup.ops.health import Readiness
from stream_dedup.runtime.lifecycle import close_all, lifecycle, require_topics, stop_on_signals

pytestmark = pytest.mark.unit


class Counts:
    """The metrics the lifecycle touches: errors counted, and a port it must not open here."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def count_error(self, kind: str) -> None:
        self.errors.append(kind)

    def serve(self, *_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("metrics.port 0 serves nothing")


def test_missing_topics_are_named_with_how_to_create_them() -> None:
    k = KafkaSettings(bootstrap_servers="b:9092")
    require_topics(k, ["in", "out"], {"in", "out", "other"})
    with pytest.raises(ServiceError, match=r"topic\(s\) dead, out do not exist on b:9092: "
                       r"create them with `stream-dedup topics create` \(same --config\)"):
        require_topics(k, ["in", "out", "dead"], {"in"})


def test_close_all_tries_every_part_and_returns_the_first_failure() -> None:
    closed: list[str] = []

    def fail(what: str) -> None:
        closed.append(what)
        raise OSError(what)

    first = close_all([("a", lambda: fail("a")), ("never opened", None),
                       ("b", lambda: closed.append("b")), ("c", lambda: fail("c"))])
    assert closed == ["a", "b", "c"]
    assert isinstance(first, OSError) and str(first) == "a"
    assert close_all([("b", lambda: None)]) is None


def test_a_signal_requests_the_shutdown_and_the_handler_is_restored() -> None:
    before = signal.getsignal(signal.SIGTERM)
    shutdown = Shutdown(1.0)
    with stop_on_signals(shutdown):
        os.kill(os.getpid(), signal.SIGTERM)
        assert shutdown.requested
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_retried_broker_call_counts_an_error_and_clears_readiness() -> None:
    metrics, ready = Counts(), Readiness(*CONDITIONS)
    ready.set(BROKER_REACHABLE, True)
    attempts = iter([KafkaConnectionError("away"), "done"])

    def step() -> str:
        outcome = next(attempts)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    k = KafkaSettings(retry_backoff_s=0.0, retry_backoff_max_s=0.0)
    with lifecycle(k, MetricsSettings(port=0), metrics, ready) as life:
        assert life.backoff.call("poll", step) == "done"
        assert not life.shutdown.requested
    assert metrics.errors == ["broker"]
    ok, detail = ready()
    assert not ok and "broker reachable" in detail
