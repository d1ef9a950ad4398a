"""The exact stage: a rolling Bloom filter in front of exact records in the state.

A normalized text's 64-bit hash goes through the Bloom filter first: "absent" is certain, so most
unique messages never touch the disk. "Present" may be a false positive, so it is confirmed
against the `exact` column family (hash -> seq and id of the first message with that text) before
anything is called a duplicate. A false positive costs one lookup and never drops a message.
"""

from __future__ import annotations

import struct

import numpy as np
import xxhash

from ..config import ExactSettings
from ..state.store import KVStore, WriteSet
from .bloom import BloomSizing, RollingBloom

SNAPSHOT_KEY = b"bloom"
_U64 = struct.Struct(">Q")


def text_hash(text: str) -> int:
    """Stable 64-bit hash of a normalized text (xxh3; Python's hash() is salted per process)."""
    return xxhash.xxh3_64_intdigest(text.encode("utf-8"))


def content_hash(normalized: str, raw: str) -> int:
    """The hash that finds a message's exact repeats, the same for the engine and the prober: of
    its normalized text, or, when normalization left nothing (only symbols, say), of its raw text
    behind a NUL, so that only the same decoration repeats it."""
    return text_hash(normalized if normalized else "\x00" + raw.strip())


def exact_key(h: int) -> bytes:
    return _U64.pack(h)


def exact_value(seq: int, message_id: str) -> bytes:
    return _U64.pack(seq) + message_id.encode("utf-8")


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
        data = self._store.get_many("meta", [SNAPSHOT_KEY])[0]
        if data is None:
            return 0
        covered = _U64.unpack_from(data)[0]
        try:
            self.bloom = RollingBloom.restore(data[8:], self.sizing)
        except ValueError:  # sized differently by an older config: rebuild from the records
            return 0
        return covered

    def snapshot(self, covered_seq: int, writes: WriteSet) -> None:
        writes.put("meta", SNAPSHOT_KEY, _U64.pack(covered_seq) + self.bloom.snapshot())

    def maybe_seen(self, hashes: np.ndarray, ts_ms: np.ndarray) -> np.ndarray:
        """Bloom test-and-add; True where the hash may have been seen before (or earlier here)."""
        return self.bloom.contains_add(hashes, ts_ms)

    def confirm(self, hashes: list[int]) -> list[str | None]:
        """The id of the stored first message of each hash, or None (a Bloom false positive)."""
        values = self._store.get_many("exact", list(map(exact_key, hashes)))
        return [None if value is None else value[8:].decode() for value in values]
