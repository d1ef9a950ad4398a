"""Expiry for the stages of `scope: global`: a periodic sweep over a store, no TTL index.

Every stored item carries its event time in its key or value, so no TTL entry is written beside
it (each write is also a changelog record: an index of expiry times would double them). Instead,
once the newest event time has moved `1/SWEEPS_PER_WINDOW` of the window since the last sweep,
a sweep reads the families and deletes what is older than the window behind the newest time.
Each item is read about `SWEEPS_PER_WINDOW` times in its life and lives at most that fraction of
a window too long.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..state.store import KVStore, WriteSet

SWEEPS_PER_WINDOW = 8


class Sweeper:
    """Decides when to sweep and stages the deletions of the expired items."""

    def __init__(self, window_ms: int, families: Sequence[str],
                 event_ms: Callable[[bytes, bytes], int]) -> None:
        self._window_ms = window_ms
        self._families = tuple(families)
        self._event_ms = event_ms
        self._swept_at: int | None = None
        self.expired = 0

    def maybe_sweep(self, store: KVStore, newest_ms: int, writes: WriteSet) -> None:
        """Stage the removal of items older than the window when a sweep is due."""
        if self._swept_at is not None and newest_ms - self._swept_at < (
                self._window_ms // SWEEPS_PER_WINDOW):
            return
        self._swept_at = newest_ms
        cutoff = newest_ms - self._window_ms
        if cutoff <= 0:
            return
        for cf in self._families:
            for key, value in store.scan(cf, b"", b"\xff" * 64):
                if self._event_ms(key, value) < cutoff:
                    writes.delete(cf, key)
                    self.expired += 1
