"""A full state disk pauses the service instead of stopping it.

The engine's verdicts come back only once the batch's state write is durable, and the service
commits a batch's offsets only after that. When the write fails because the state's filesystem
is full, the batch is neither delivered nor committed: the decider here says so in one line,
waits, and decides the same batch again once there is room, so nothing is lost and no person has
to restart anything.

RocksDB refuses every write after a failed one until the database is opened again (and a close
of such a database fails, keeping its lock until the object is gone), so each attempt opens the
state anew, as a restart would: the batch's failed write left nothing behind (a write is atomic),
and what the engine had in memory is read again from the state. Running totals go on across the
reopenings (the metrics count their deltas).
"""

from __future__ import annotations

import errno
import gc
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..engine.batch import EngineStats
from ..errors import StateError
from ..kafka.retry import Backoff, CutShort
from ..records import Message, Verdict
from .contracts import Decider

log = logging.getLogger(__name__)
REMIND_EVERY_S = 60.0
NO_SPACE = "No space left on device"  # strerror(ENOSPC), as RocksDB's errors quote it


def is_disk_full(exc: BaseException) -> bool:
    """Whether `exc` is a state write (or open) that failed for want of disk space."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    return isinstance(exc, StateError) and NO_SPACE in str(exc)


def add_stats(a: EngineStats, b: EngineStats) -> EngineStats:
    """Running totals of two engines, one after the other."""
    return EngineStats(
        a.messages + b.messages,
        a.decisions + b.decisions,
        a.replayed + b.replayed,
        a.expired + b.expired,
        a.candidates + b.candidates,
        {k: a.stage_seconds.get(k, 0.0) + v for k, v in b.stage_seconds.items()},
    )


class OutlastsFullDisk:
    """The decider `open_decider()` makes, opened again after a write that found the state disk
    full, every backoff step until the batch is decided; a stop asked meanwhile
    (`backoff.stopping`) raises CutShort (nothing of the batch was delivered or committed: it
    is replayed). Everything else the service or the metrics read is the current decider's."""

    _decider: Decider | None = None

    def __init__(self, open_decider: Callable[[], Decider], backoff: Backoff) -> None:
        self._open = open_decider
        self._backoff = backoff
        self._decider: Decider | None = open_decider()
        self._on_candidates: Callable[[str, list[str]], None] | None = None
        self._carried: EngineStats | None = None  # totals of the deciders closed before
        self._submitted: Any = None  # the pipelined decider's batch being decided

    def __getattr__(self, name: str) -> Any:
        return getattr(self._decider, name)

    @property
    def on_candidates(self) -> Callable[[str, list[str]], None] | None:
        """The decider's hook told the candidates each message was compared with, kept for the
        deciders opened anew."""
        return self._on_candidates

    @on_candidates.setter
    def on_candidates(self, hook: Callable[[str, list[str]], None] | None) -> None:
        self._on_candidates = hook
        if self._decider is not None:
            self._decider.on_candidates = hook  # type: ignore[attr-defined]

    @property
    def stats(self) -> EngineStats:
        current = self._decider.stats  # type: ignore[union-attr]
        return current if self._carried is None else add_stats(self._carried, current)

    def process(self, messages: Sequence[Message]) -> list[Verdict]:
        return self._until_decided(lambda d, _fresh: d.process(messages))

    def submit(self, prepared: Any) -> None:
        self._submitted = prepared
        self._decider.submit(prepared)  # type: ignore[union-attr]

    def result(self) -> list[Verdict]:
        def decide(d: Any, fresh: bool) -> list[Verdict]:
            if fresh:  # opened anew: the batch is submitted to it again
                d.submit(self._submitted)
            return d.result()

        return self._until_decided(decide)

    def _until_decided(self, decide: Callable[[Any, bool], list[Verdict]]) -> list[Verdict]:
        """`decide(decider, fresh)` until it succeeds, opening the decider anew (`fresh`) after
        each attempt that found the disk full."""
        full_since: float | None = None
        said = 0.0
        delay = self._backoff.first_s
        while True:
            error = None
            try:
                fresh = self._decider is None
                if fresh:
                    self._decider = self._open()
                    if self._on_candidates is not None:
                        self._decider.on_candidates = self._on_candidates  # type: ignore[attr-defined]
                verdicts = decide(self._decider, fresh)
            except Exception as exc:
                if not is_disk_full(exc):
                    raise
                error = str(exc)  # not `exc`: its frames hold the broken state open
            if error is None:
                if full_since is not None:
                    log.warning(
                        "state disk has room again: going on waited_s=%.0f",
                        time.monotonic() - full_since,
                    )
                return verdicts
            now = time.monotonic()
            if full_since is None:
                full_since = said = now
                log.warning(
                    "state disk full: deciding and committing paused until there is "
                    "room (the batch is decided again then, nothing is lost) error=%s",
                    error,
                )
            elif now - said >= REMIND_EVERY_S:
                said = now
                log.warning("state disk still full waited_s=%.0f", now - full_since)
            self._drop()
            if self._backoff.stopping():
                raise CutShort("waiting for room on the state disk")
            self._backoff.wait(delay)
            delay = min(delay * 2, self._backoff.max_s)

    def _drop(self) -> None:
        """Close the decider whose state refused a write; its totals are kept. Its close fails
        too (RocksDB refuses to flush): the directory lock goes with the object."""
        decider, self._decider = self._decider, None
        if decider is None:
            return
        self._carried = (
            decider.stats
            if self._carried is None  # type: ignore[attr-defined]
            else add_stats(self._carried, decider.stats)
        )  # type: ignore[attr-defined]
        try:
            decider.close()
        except Exception as exc:
            if not is_disk_full(exc) and "previous error" not in str(exc):
                raise
        del decider
        gc.collect()  # RocksDB's lock is released when the last reference to it goes

    def close(self) -> None:
        if self._decider is not None:
            self._decider.close()
