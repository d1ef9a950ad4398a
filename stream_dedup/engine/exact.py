"""The exact stage: a rolling Bloom filter in front of exact records in the state.

A normalized text's 64-bit hash goes through the Bloom filter first: "absent" is certain, so most
unique messages never touch the disk. "Present" may be a false positive, so it is confirmed
against the `exact` column family (hash -> seq, ending and id of the first message with that text)
before anything is called a duplicate. A false positive costs one lookup and never drops a message.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
import xxhash

from ..config import ExactSettings
from ..state.store import KVStore, WriteSet
from .bloom import BloomSizing, RollingBloom
from .mood import ASKS, NONE, STATES

SNAPSHOT_KEY = b"bloom"  # the seq covered, the bits' CRC-32 and the filter's header
CHUNK_PREFIX = b"bloom/"  # + chunk number: the bits, a slice a key (an all-zero one absent)
_CHUNK_WORDS = 1 << 19  # 4 MiB a chunk
_U64 = struct.Struct(">Q")
_HEAD = struct.Struct(">QI")  # seq covered, CRC-32 of the bits


def chunk_key(number: int) -> bytes:
    return CHUNK_PREFIX + struct.pack(">I", number)


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


# A message's ending (`mood.ending`) in the two top bits of its stored seq: a record written
# without one reads as NONE.
_ENDINGS = (NONE, ASKS, STATES)
_TOP_BITS = {ending: code << 62 for code, ending in enumerate(_ENDINGS)}
_SEQ_BITS = (1 << 62) - 1


def exact_value(seq: int, message_id: str, ending: str = NONE) -> bytes:
    return _U64.pack(seq | _TOP_BITS[ending]) + message_id.encode("utf-8")


def exact_entry(value: bytes) -> tuple[int, str, str]:
    """The seq, id and ending of the message an exact record names."""
    (word,) = _U64.unpack_from(value)
    return word & _SEQ_BITS, value[8:].decode(), _ENDINGS[word >> 62]


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
        """Load the last snapshot; returns the seq up to which it is complete (0: none, or one
        torn by a crash between its writes, or of another layout: rebuilt from the records)."""
        data = self._store.get_many("meta", [SNAPSHOT_KEY])[0]
        if data is None or len(data) < _HEAD.size:
            return 0
        covered, crc = _HEAD.unpack_from(data)
        try:
            bloom = RollingBloom.restore(data[_HEAD.size :], self.sizing)
        except ValueError:  # sized differently by an older config: rebuild from the records
            return 0
        words, check = bloom.words(), 0
        for number, start in enumerate(range(0, words.size, _CHUNK_WORDS)):
            chunk = words[start : start + _CHUNK_WORDS]
            stored = self._store.get_many("meta", [chunk_key(number)])[0]
            if stored is not None:
                if len(stored) != chunk.nbytes:
                    return 0
                chunk[...] = np.frombuffer(stored, "<u8")
            check = zlib.crc32(chunk, check)
        if check != crc:
            return 0
        self.bloom = bloom
        return covered

    def snapshot(self, covered_seq: int, writes: WriteSet) -> None:
        """Write the filter's bits a chunk a write (a copy of one chunk at a time, never of the
        whole filter: ~86 MB at the default sizing), then put into `writes` the header with the
        seq it covers and the bits' CRC, which `restore` checks: a snapshot torn by a crash
        between its writes is not used."""
        words, crc = self.bloom.words(), 0
        for number, start in enumerate(range(0, words.size, _CHUNK_WORDS)):
            chunk = words[start : start + _CHUNK_WORDS]
            crc = zlib.crc32(chunk, crc)
            one = WriteSet()
            if chunk.any():
                one.put("meta", chunk_key(number), chunk.astype("<u8", copy=False).tobytes())
            else:  # never written: not copied
                one.delete("meta", chunk_key(number))
            self._store.write(one)
        for key, _ in self._store.scan("meta", chunk_key(number + 1), chunk_key(2**32 - 1)):
            writes.delete("meta", key)  # of a larger filter configured before
        writes.put("meta", SNAPSHOT_KEY, _HEAD.pack(covered_seq, crc) + self.bloom.header())

    def maybe_seen(self, hashes: np.ndarray, ts_ms: np.ndarray) -> np.ndarray:
        """Bloom test-and-add; True where the hash may have been seen before (or earlier here)."""
        return self.bloom.contains_add(hashes, ts_ms)

    def confirm(self, hashes: list[int]) -> list[tuple[str, str] | None]:
        """The id and ending of the stored first message of each hash, or None (a Bloom false
        positive)."""
        values = self._store.get_many("exact", list(map(exact_key, hashes)))
        return [None if value is None else exact_entry(value)[1:] for value in values]
