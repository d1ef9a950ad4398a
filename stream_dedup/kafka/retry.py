"""Retrying a step while the broker is away: backoff, a log line, and a way out on shutdown.

Kafka steps fail for two kinds of reasons. Retriable ones (the broker is down or moving, a
request timed out: kafka-python marks these ``retriable``) are waited out here with backoff
doubling from `first_s` to `max_s`, logged once per attempt. Anything else is raised to the
caller, which knows what it means (a lost commit after a rebalance, a record too large).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from kafka.errors import KafkaError

from ..errors import ServiceError

log = logging.getLogger(__name__)
T = TypeVar("T")


class GaveUp(Exception):
    """The service is stopping and its shutdown time ran out before the step succeeded."""


class CutShort(GaveUp):
    """The service is stopping, and the step was one not worth finishing first (a changelog
    restore, a wait for room on a full state disk): it ended at once, nothing of its batch was
    delivered or committed."""


class TransactionAborted(Exception):
    """`kafka.guarantee: exactly_once`: the batch's transaction was aborted (or fenced), none of
    it is visible; the service decides the batch again (`kafka/transaction.py`)."""


def stopped_how(exc: GaveUp) -> str:
    """How a stop ended the step that raised `exc`, for its one log line."""
    return "stopped on request" if isinstance(exc, CutShort) else "shutdown time ran out"


def is_retriable(exc: BaseException) -> bool:
    return isinstance(exc, KafkaError) and bool(getattr(exc, "retriable", False))


def _ignore(what: str, exc: BaseException) -> None:
    return


@dataclass(frozen=True, slots=True)
class Backoff:
    """Waits between attempts; `give_up` is asked before each wait, `on_retry(what, error)` is
    told of each failed attempt that `call` retries (the service counts them as broker errors).
    `stopping` is true once a stop was asked: steps not worth finishing then (`CutShort`) end
    at once rather than when `give_up` turns true."""

    first_s: float
    max_s: float
    give_up: Callable[[], bool] = lambda: False
    sleep: Callable[[float], None] = time.sleep
    on_retry: Callable[[str, BaseException], None] = _ignore
    stopping: Callable[[], bool] = lambda: False

    def call(self, what: str, step: Callable[[], T], limit_s: float | None = None) -> T:
        """Run `step` until it succeeds; raise GaveUp when `give_up()` turns true first, and a
        ServiceError when it has failed for `limit_s` (None: no limit). Each failed attempt is
        one WARNING line saying how long the step has been failing."""
        delay = self.first_s
        attempt = 1
        started = time.monotonic()
        while True:
            try:
                return step()
            except Exception as exc:
                if not is_retriable(exc):
                    raise
                if self.give_up():
                    raise GaveUp(f"{what}: {exc}") from None
                waited = time.monotonic() - started
                if limit_s is not None and waited >= limit_s:
                    raise ServiceError(f"{what}: no answer for {waited:.0f} s (after {attempt} "
                                       f"attempts, kafka.connect_timeout_s={limit_s:g}): "
                                       f"{exc}") from None
                log.warning("%s failed, retrying attempt=%d waited_s=%.0f wait_s=%.1f error=%s",
                            what, attempt, waited, delay, exc)
                self.on_retry(what, exc)
            self.wait(delay)
            delay = min(delay * 2, self.max_s)
            attempt += 1

    def wait(self, seconds: float) -> None:
        """Sleep in short slices so a shutdown request is noticed soon."""
        end = time.monotonic() + seconds
        while not self.give_up() and (left := end - time.monotonic()) > 0:
            self.sleep(min(left, 0.2))


class Throttle(logging.Filter):
    """Lets each distinct log message template through at most once per `every_s` seconds.

    kafka-python logs every refused connection; while a broker restarts that is hundreds of
    lines a minute saying the same thing.
    """

    def __init__(self, every_s: float = 30.0) -> None:
        super().__init__()
        self.every_s = every_s
        self._last: dict[object, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        now = time.monotonic()
        key = (record.name, record.msg)
        if now - self._last.get(key, -1e18) < self.every_s:
            return False
        self._last[key] = now
        return True


class Shutdown:
    """A stop request shared by the loop and every retry: after `request()`, steps still try
    until `timeout_s` has passed, then `expired()` turns true and retries give up. Before
    `running()` (the process is still starting: connecting, reading metadata) there is no work
    to finish, and a request expires at once."""

    def __init__(self, timeout_s: float, clock: Callable[[], float] = time.monotonic,
                 running: bool = True) -> None:
        self.timeout_s = timeout_s
        self._clock = clock
        self._deadline: float | None = None
        self._running = running

    def running(self) -> None:
        """The process has started: from now on a stop finishes the work in hand first."""
        self._running = True

    def request(self) -> None:
        """Ask the service to stop; safe to call from a signal handler (sets two numbers)."""
        if self._deadline is None:
            self._deadline = self._clock() + (self.timeout_s if self._running else 0.0)

    @property
    def requested(self) -> bool:
        return self._deadline is not None

    def expired(self) -> bool:
        return self._deadline is not None and self._clock() >= self._deadline
