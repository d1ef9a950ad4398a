"""The lifecycle the service and the stages share: topic checks, closing every part, signals,
and the broker backoff that marks the broker unreachable."""

from __future__ import annotations

import os
import signal
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest
from kafka.errors import KafkaConnectionError

from stream_dedup.config import KafkaSettings, MetricsSettings
from stream_dedup.errors import ServiceError
from stream_dedup.kafka import retry
from stream_dedup.kafka.reporting import BROKER_REACHABLE, CONDITIONS
from stream_dedup.kafka.retry import Backoff, GaveUp, Shutdown
from stream_dedup.kafka.security import WATCH, connect
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


def test_each_backoff_step_says_how_long_it_has_waited_and_the_limit_ends_it(
        monkeypatch, caplog) -> None:
    now = [0.0]
    monkeypatch.setattr(retry.time, "monotonic", lambda: now[0])

    def away() -> None:
        now[0] += 4.0  # one bootstrap attempt
        raise KafkaConnectionError("refused")

    backoff = Backoff(1.0, 8.0, sleep=lambda s: now.__setitem__(0, now[0] + s))
    with pytest.raises(ServiceError, match=r"connecting: no answer for 1\d s .*"
                                           r"kafka.connect_timeout_s=12"):
        backoff.call("connecting", away, limit_s=12.0)
    said = [r.getMessage() for r in caplog.records]
    assert [s.split("waited_s=")[1].split()[0] for s in said] == ["4", "9"]
    assert all(r.levelname == "WARNING" for r in caplog.records)


def test_a_stop_before_the_process_runs_expires_at_once() -> None:
    clock = [100.0]
    starting = Shutdown(30.0, clock=lambda: clock[0], running=False)
    starting.request()
    assert starting.expired()
    started = Shutdown(30.0, clock=lambda: clock[0], running=False)
    started.running()
    started.request()
    assert not started.expired()
    clock[0] += 30.0
    assert started.expired()


def test_a_connect_ends_when_the_stop_gives_up_on_it() -> None:
    made = threading.Event()

    def slow() -> object:
        made.wait(10)
        return SimpleNamespace(close=lambda: None)

    started = time.monotonic()
    with pytest.raises(GaveUp, match="the broker has not answered yet"):
        connect("connecting the consumer", KafkaSettings(), slow, give_up=lambda: True)
    assert time.monotonic() - started < 2
    made.set()  # the abandoned attempt ends: kafka-python's lines are no longer held
    deadline = time.monotonic() + 5
    while WATCH.connecting and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not WATCH.connecting


def test_kafka_client_lines_carry_no_traceback(capsys) -> None:
    import logging

    from stream_dedup.runtime.lifecycle import quiet_kafka_logs

    root = logging.getLogger()
    handler = logging.StreamHandler()
    root.addHandler(handler)
    try:
        quiet_kafka_logs()
        try:
            raise ConnectionResetError(104, "Connection reset by peer")
        except ConnectionResetError:
            logging.getLogger("kafka.net.transport").exception("Error receiving network data")
    finally:
        root.removeHandler(handler)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip() == ("Error receiving network data: ConnectionResetError: [Errno 104] "
                           "Connection reset by peer")
