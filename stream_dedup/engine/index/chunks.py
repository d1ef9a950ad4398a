"""Buckets that append: a bucket's newest entries in its head value, older ones sealed in chunks.

A bucket is read whole by every query that probes it, but an insert should write only what it
adds: a bucket that one value held would be read and written whole at every insert, so a bucket
that near-duplicate copies keep filling would cost each new copy its whole size twice over. So
the head value (key: the bucket key) holds at most `CHUNK` entries; when an insert would take it
past that, its oldest `CHUNK` entries are sealed in a chunk value (key: the bucket key and the
chunk's number), written once. A head with sealed chunks starts with a header entry (seq
`SEALED`, never a message's) whose fingerprint field holds the numbers of its first and
past-the-last chunks. Expiry takes the oldest entries: it rewrites the chunks it thins and
deletes those it empties by range, advancing the header past them.

Readers see one value a bucket, its chunks' entries then its head's, oldest first
(`read_buckets`); writers hand `seal` the whole new value of each bucket they change.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ...state.store import KVStore, WriteSet

CHUNK = 64  # entries a head holds before its oldest are sealed (1 KiB)
ENTRY_BYTES = 16  # `tables.ENTRY`: fingerprint, seq
_CHUNK_BYTES = CHUNK * ENTRY_BYTES
_HEADER = struct.Struct("<QQ")
SEALED = 2**64 - 1
_SEALED_TAIL = b"\xff" * 8
_NUMBER = struct.Struct(">I")


@dataclass(frozen=True, slots=True)
class Sealed:
    """A bucket's sealed chunks as read: the first one's number and each one's entries."""

    first: int
    sizes: tuple[int, ...]

    @property
    def entries(self) -> int:
        return sum(self.sizes)

    @property
    def end(self) -> int:
        return self.first + len(self.sizes)


def chunk_key(bucket: bytes, number: int) -> bytes:
    """Sorts right after its bucket's head and before the next bucket (keys of one length)."""
    return bucket + _NUMBER.pack(number)


def _header(value: bytes | None) -> tuple[int, int] | None:
    if value is None or len(value) < ENTRY_BYTES or value[8:16] != _SEALED_TAIL:
        return None
    span = _HEADER.unpack_from(value)[0]
    return span >> 32, span & 0xFFFF_FFFF


def read_buckets(store: KVStore, names: Sequence[bytes]
                 ) -> tuple[list[bytes | None], dict[bytes, Sealed]]:
    """Every bucket's entries in one value (None: no bucket), and the sealed chunks of those
    that have some, by bucket key: one multi-get of the heads, one of the chunks."""
    values = store.get_many("blocks", names)
    spans = {i: span for i, value in enumerate(values)  # sealed heads are the rare ones
             if value and value[8:16] == _SEALED_TAIL and (span := _header(value)) is not None}
    if not spans:
        return values, {}
    keys = [chunk_key(names[i], n) for i, (lo, hi) in spans.items() for n in range(lo, hi)]
    chunks = iter(store.get_many("blocks", keys))
    sealed = {}
    for i, (lo, hi) in spans.items():
        parts = [next(chunks) or b"" for _ in range(lo, hi)]
        sealed[names[i]] = Sealed(lo, tuple(len(p) // ENTRY_BYTES for p in parts))
        values[i] = b"".join(parts) + values[i][ENTRY_BYTES:]
    return values, sealed


def seal(bucket: bytes, value: bytes, sealed: Sealed | None) -> Iterator[tuple[bytes, bytes]]:
    """The puts that store `value` (the bucket's entries, oldest first; its sealed chunks'
    entries unchanged at the front) when only entries were added: the head, and any chunk
    sealed now. A small bucket is one put of the value as it is."""
    old = sealed.entries * ENTRY_BYTES if sealed else 0
    head = value[old:]
    if sealed is None and len(head) <= _CHUNK_BYTES:
        yield bucket, value
        return
    first = sealed.first if sealed else 0
    end = sealed.end if sealed else 0
    count = max(0, -(-(len(head) - _CHUNK_BYTES) // _CHUNK_BYTES))  # leaving <= CHUNK
    cut = count * _CHUNK_BYTES
    yield bucket, _HEADER.pack(first << 32 | (end + count), SEALED) + head[cut:]
    for n in range(count):  # after the head: keys ascending, as a bulk load writes them
        yield chunk_key(bucket, end + n), head[n * _CHUNK_BYTES : (n + 1) * _CHUNK_BYTES]


def rewrite(bucket: bytes, kept: list[bool], value: bytes, sealed: Sealed | None,
            writes: WriteSet) -> None:
    """Stage what expiry leaves of a bucket read as `value`: `kept[i]` says whether entry i
    stays. Chunks emptied from the first on are range-deleted, thinned ones rewritten."""
    entries = [value[i : i + ENTRY_BYTES] for i in range(0, len(value), ENTRY_BYTES)]
    at, first = 0, sealed.first if sealed else 0
    sizes = sealed.sizes if sealed else ()
    for number, size in enumerate(sizes, start=first):
        part = [e for e, keep in zip(entries[at : at + size], kept[at : at + size], strict=True)
                if keep]
        if not part and number == first:
            first += 1
        elif len(part) < size:
            writes.put("blocks", chunk_key(bucket, number), b"".join(part))
        at += size
    if sealed and first > sealed.first:
        writes.delete_range("blocks", chunk_key(bucket, sealed.first), chunk_key(bucket, first))
    head = b"".join(e for e, keep in zip(entries[at:], kept[at:], strict=True) if keep)
    end = sealed.end if sealed else 0
    if first < end:
        writes.put("blocks", bucket, _HEADER.pack(first << 32 | end, SEALED) + head)
    elif head:
        writes.put("blocks", bucket, head)
    else:
        writes.delete("blocks", bucket)
