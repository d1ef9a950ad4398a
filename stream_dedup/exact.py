"""The exact stage: a rolling Bloom filter in front of exact records in the state.

A normalized text's 64-bit hash goes through the Bloom filter first: "absent" is certain, so most
unique messages never touch the disk. "Present" may be a false positive, so it is confirmed
against the `exact` column family (hash -> seq and id of the first message with that text) before
anything is called a duplicate. A false positive costs one lookup and never drops a message.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import xxhash

from .bloom import BloomSizing, RollingBloom
from .config import ExactSettings
from .state.store import KVStore, WriteSet

_SNAPSHOT_KEY = b"bloom"


@dataclass(frozen=True, slots=True)
class ExactMatch:
    """The first message with the same normalized text."""

    seq: int
    id: str


def text_hash(text: str) -> int:
    """Stable 64-bit hash of a normalized text (xxh3; Python's hash() is salted per process)."""
    return xxhash.xxh3_64_intdigest(text.encode("utf-8"))


def exact_key(h: int) -> bytes:
    return struct.pack(">Q", h)


def exact_value(seq: int, message_id: str) -> bytes:
    return struct.pack(">Q", seq) + message_id.encode("utf-8")


class ExactStage:
    """Bloom filter plus confirmation. The filter is snapshotted into `meta` on `snapshot()` with
    the seq it covers; on open, what was written after that seq is added again (see Engine)."""

    def __init__(self, settings: ExactSettings, window_s: float, store: KVStore) -> None:
        self._store = store
        self.sizing = BloomSizing.from_rate(
            expected_rate_per_s=settings.expected_rate_per_s,
            window_s=window_s,
            generations=settings.generations,
            fp_rate=settings.false_positive_rate,
        )
        self.bloom = RollingBloom(self.sizing)
        self.bloom_hits = 0
        self.false_positives = 0

    def restore(self) -> int:
        """Load the last snapshot; returns the seq up to which it is complete (0: none)."""
        data = self._store.get_many("meta", [_SNAPSHOT_KEY])[0]
        if data is None:
            return 0
        covered = struct.unpack(">Q", data[:8])[0]
        try:
            self.bloom = RollingBloom.restore(data[8:], self.sizing)
        except ValueError:  # sized differently by an older config: rebuild from the records
            return 0
        return covered

    def snapshot(self, covered_seq: int, writes: WriteSet) -> None:
        writes.put("meta", _SNAPSHOT_KEY, struct.pack(">Q", covered_seq) + self.bloom.snapshot())

    def maybe_seen(self, hashes: np.ndarray, ts_ms: np.ndarray) -> np.ndarray:
        """Bloom test-and-add; True where the hash may have been seen before (or earlier here)."""
        return self.bloom.contains_add(hashes.astype(np.uint64), ts_ms.astype(np.int64))

    def confirm(self, hashes: list[int]) -> list[ExactMatch | None]:
        """The stored first message of each hash, or None (a Bloom false positive)."""
        values = self._store.get_many("exact", [exact_key(h) for h in hashes])
        found: list[ExactMatch | None] = []
        for value in values:
            if value is None:
                found.append(None)
            else:
                found.append(ExactMatch(struct.unpack(">Q", value[:8])[0], value[8:].decode()))
        return found
