"""Retrying a step while the broker is away: retriable errors waited out with doubling backoff,
others raised; a shutdown request that gives up after its timeout; repeated log lines throttled."""

import logging
from types import SimpleNamespace

import pytest
from kafka.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError

from stream_dedup.kafka import retry
from stream_dedup.kafka.retry import Backoff, GaveUp, Shutdown, Throttle, is_retriable

pytestmark = pytest.mark.unit


def test_backoff_waits_out_retriable_errors_only() -> None:
    calls = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise KafkaConnectionError("refused")
        return "ok"

    sleeps: list[float] = []
    backoff = Backoff(0.1, 0.15, sleep=sleeps.append)
    assert backoff.call("connecting", flaky) == "ok" and len(calls) == 3
    with pytest.raises(KafkaError):
        backoff.call("x", lambda: (_ for _ in ()).throw(KafkaError("fatal")))
    stopping = Backoff(0.1, 1.0, give_up=lambda: True)
    with pytest.raises(GaveUp):
        stopping.call("connecting", lambda: (_ for _ in ()).throw(KafkaConnectionError("x")))
def test_delays_double_up_to_the_most_and_each_retry_is_told(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    monkeypatch.setattr(retry, "time", SimpleNamespace(monotonic=lambda: now[0]))
    failures = iter([KafkaConnectionError("a")] * 5)
    told: list[str] = []

    def step() -> int:
        exc = next(failures, None)
        if exc is not None:
            raise exc
        return 7

    backoff = Backoff(1.0, 3.0, sleep=sleep, on_retry=lambda what, exc: told.append(what))
    with caplog.at_level(logging.WARNING, logger=retry.__name__):
        assert backoff.call("polling", step) == 7
    # (attempt, seconds waited so far, the next wait)
    assert [r.args[1:4] for r in caplog.records] == [(1, 0, 1.0), (2, 1, 2.0), (3, 3, 3.0),
                                                     (4, 6, 3.0), (5, 9, 3.0)]
    assert now[0] == pytest.approx(12.0) and told == ["polling"] * 5


def test_only_kafkas_retriable_errors_are_retriable() -> None:
    assert is_retriable(KafkaConnectionError()) and is_retriable(KafkaTimeoutError())
    assert not is_retriable(KafkaError()) and not is_retriable(ConnectionError())


def test_shutdown_gives_up_once_its_timeout_has_passed() -> None:
    now = [100.0]
    shutdown = Shutdown(5.0, clock=lambda: now[0])
    assert not shutdown.requested and not shutdown.expired()
    shutdown.request()
    now[0] = 104.9
    assert shutdown.requested and not shutdown.expired()
    shutdown.request()  # a second request does not move the deadline
    now[0] = 105.0
    assert shutdown.expired()


def test_wait_stops_sleeping_when_asked_to_give_up() -> None:
    sleeps: list[float] = []
    backoff = Backoff(1.0, 1.0, give_up=lambda: len(sleeps) >= 2, sleep=sleeps.append)
    backoff.wait(60.0)
    assert len(sleeps) == 2 and all(s <= 0.2 for s in sleeps)  # short slices


def test_throttle_lets_each_template_through_once_per_period() -> None:
    throttle = Throttle(every_s=3600.0)

    def record(msg: str, *args: object) -> logging.LogRecord:
        return logging.LogRecord("kafka.conn", logging.WARNING, "", 0, msg, args, None)

    assert throttle.filter(record("refused %s", "a"))
    assert not throttle.filter(record("refused %s", "b"))  # same template, other arguments
    assert throttle.filter(record("closed %s", "a"))
    assert Throttle(every_s=0.0).filter(record("refused %s", "a"))
