"""A full state disk: the decider is opened again until the batch is written."""

from __future__ import annotations

import errno
import logging
from collections import Counter

import pytest

from stream_dedup.engine.batch import EngineStats
from stream_dedup.errors import StateError
from stream_dedup.kafka.retry import Backoff, CutShort
from stream_dedup.runtime.state_space import OutlastsFullDisk, add_stats, is_disk_full

pytestmark = pytest.mark.unit

FULL = StateError("state write failed in /s: IO error: No space left on device: While appending")


class Flaky:
    """A decider whose writes fail while `full[0]` says the disk is full."""

    def __init__(self, full: list[bool], closed: list[str]) -> None:
        self.full = full
        self.closed = closed
        self.stats = EngineStats(messages=0)

    def process(self, messages):
        if self.full[0]:
            raise FULL
        self.stats.messages += len(messages)
        return [f"verdict {m}" for m in messages]

    def close(self) -> None:
        self.closed.append("closed")
        if self.full[0]:
            raise StateError("closing the state in /s failed: IO error: Writer has previous error.")


def _backoff(stopping=lambda: False) -> Backoff:
    return Backoff(0.01, 0.04, stopping=stopping)


def test_disk_full_errors_are_told_apart() -> None:
    assert is_disk_full(FULL)
    assert is_disk_full(OSError(errno.ENOSPC, "No space left on device"))
    assert not is_disk_full(StateError("state read failed in /s/docs: Corruption: bad block"))
    assert not is_disk_full(OSError(errno.EACCES, "Permission denied"))


def test_totals_of_two_engines_add_up() -> None:
    a = EngineStats(3, Counter(unique=2, exact=1), 1, 0, 5, {"verify": 1.0, "write": 0.5})
    b = EngineStats(2, Counter(unique=2), 0, 1, 4, {"verify": 0.5, "write": 0.5})
    total = add_stats(a, b)
    assert (total.messages, total.replayed, total.expired, total.candidates) == (5, 1, 1, 9)
    assert total.decisions == Counter(unique=4, exact=1)
    assert total.stage_seconds == {"verify": 1.5, "write": 1.0}


def test_the_batch_is_decided_once_the_disk_has_room(caplog) -> None:
    full, closed, opened = [False], [], []

    def open_decider() -> Flaky:
        opened.append(1)
        if len(opened) == 5:
            full[0] = False  # space freed while the service waited
        return Flaky(full, closed)

    decider = OutlastsFullDisk(open_decider, _backoff())
    assert decider.process([1, 2]) == ["verdict 1", "verdict 2"]
    full[0] = True
    with caplog.at_level(logging.WARNING, "stream_dedup.runtime.state_space"):
        assert decider.process([3]) == ["verdict 3"]
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2 and said[0].startswith("state disk full") and "room again" in said[1]
    assert len(opened) == 5 and len(closed) == 4  # each broken decider closed, the last open
    assert decider.stats.messages == 3  # the totals go on across the reopenings


def test_a_stop_asked_while_the_disk_is_full_ends_the_wait() -> None:
    full, closed = [True], []
    decider = OutlastsFullDisk(lambda: Flaky(full, closed), _backoff(lambda: len(closed) >= 2))
    with pytest.raises(CutShort, match="room on the state disk"):
        decider.process([1])
    assert len(closed) == 2
    decider.close()  # nothing open: nothing to close


def test_other_state_errors_are_raised() -> None:
    class Broken(Flaky):
        def process(self, messages):
            raise StateError("state read failed in /s/docs: Corruption: bad block")

    decider = OutlastsFullDisk(lambda: Broken([False], []), _backoff())
    with pytest.raises(StateError, match="Corruption"):
        decider.process([1])


def test_the_candidates_hook_reaches_every_decider_opened() -> None:
    full, closed, opened = [False], [], []

    def open_decider() -> Flaky:
        opened.append(Flaky(full, closed))
        if len(opened) == 3:
            full[0] = False
        return opened[-1]

    decider = OutlastsFullDisk(open_decider, _backoff())
    assert decider.on_candidates is None
    decider.on_candidates = hook = print
    assert opened[0].on_candidates is hook
    full[0] = True
    decider.process([1])
    assert len(opened) == 3 and all(d.on_candidates is hook for d in opened)
