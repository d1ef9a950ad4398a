"""Expiry of the global scope's stores without a TTL index: a sweep is due each time the newest
event time moves an eighth of the window, and deletes exactly the items older than the window."""

import struct

import pytest

from stream_dedup.scale.sweep import SWEEPS_PER_WINDOW, Sweeper
from stream_dedup.state import MemoryStore, WriteSet

pytestmark = pytest.mark.unit
WINDOW_MS = 80_000


def stored(*times: int) -> MemoryStore:
    """A store of items keyed by their event time, in two families."""
    store = MemoryStore(("a", "b"))
    writes = WriteSet()
    for n, ts in enumerate(times):
        writes.put("ab"[n % 2], struct.pack(">Q", ts), b"v")
    store.write(writes)
    return store


def event_ms(key: bytes, value: bytes) -> int:
    return struct.unpack(">Q", key)[0]


def left(store: MemoryStore) -> list[int]:
    return sorted(event_ms(k, v) for cf in ("a", "b") for k, v in store.scan(cf, b"", b"\xff" * 9))


def sweep(sweeper: Sweeper, store: MemoryStore, newest_ms: int) -> None:
    writes = WriteSet()
    sweeper.maybe_sweep(store, newest_ms, writes)
    store.write(writes)


def test_a_sweep_deletes_exactly_what_is_older_than_the_window() -> None:
    store = stored(1_000, 19_999, 20_000, 50_000, 99_000)
    sweeper = Sweeper(WINDOW_MS, ("a", "b"), event_ms)
    sweep(sweeper, store, 100_000)  # cutoff 20,000: kept from there on
    assert left(store) == [20_000, 50_000, 99_000] and sweeper.expired == 2


def test_a_sweep_is_due_after_an_eighth_of_the_window() -> None:
    store = stored(10_000, 40_000)
    sweeper = Sweeper(WINDOW_MS, ("a", "b"), event_ms)
    sweep(sweeper, store, 85_000)  # cutoff 5,000: nothing older yet
    assert left(store) == [10_000, 40_000]
    step = WINDOW_MS // SWEEPS_PER_WINDOW
    sweep(sweeper, store, 85_000 + step - 1)  # not due: 10,000 stays though it is old now
    assert left(store) == [10_000, 40_000]
    sweep(sweeper, store, 85_000 + step)
    assert left(store) == [40_000]


def test_nothing_is_swept_before_a_window_has_passed() -> None:
    store = stored(1, 2)
    sweeper = Sweeper(WINDOW_MS, ("a", "b"), event_ms)
    sweep(sweeper, store, WINDOW_MS)
    assert left(store) == [1, 2] and sweeper.expired == 0
