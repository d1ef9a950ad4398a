"""The key-value contract of the state, and its in-memory reference implementation."""

from __future__ import annotations

import bisect
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(slots=True)
class WriteSet:
    """Writes applied atomically by `KVStore.write`: puts, deletes (value None), range deletes."""

    ops: list[tuple[str, bytes, bytes | None]] = field(default_factory=list)
    ranges: list[tuple[str, bytes, bytes]] = field(default_factory=list)

    def put(self, cf: str, key: bytes, value: bytes) -> None:
        self.ops.append((cf, key, value))

    def delete(self, cf: str, key: bytes) -> None:
        self.ops.append((cf, key, None))

    def delete_range(self, cf: str, start: bytes, end: bytes) -> None:
        self.ranges.append((cf, start, end))


class KVStore(Protocol):
    """Column families of bytes -> bytes. `write` is atomic; after it returns the writes survive
    a crash of the process (and of the machine when the store syncs)."""

    def get_many(self, cf: str, keys: Sequence[bytes]) -> list[bytes | None]: ...

    def scan(self, cf: str, start: bytes, end: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Entries with start <= key < end, in key order."""
        ...

    def write(self, writes: WriteSet) -> None: ...

    def ingest(self, cf: str, items: Iterable[tuple[bytes, bytes]]) -> int:
        """Bulk load: (key, value) items, keys ascending and new to the table, added past the
        ordinary write path; returns how many."""
        ...

    def disk_bytes(self) -> int: ...

    def close(self, keep: bool = True) -> None:
        """Release the store; `keep=False` when it is removed right after (nothing need be
        made durable on the way out)."""
        ...


class MemoryStore:
    """Dicts plus sorted key lists: the reference implementation and the tests' double.
    `tables`: the column families its user writes (the engine's: `engine.stored.TABLES`)."""

    def __init__(self, tables: Collection[str]) -> None:
        self._data: dict[str, dict[bytes, bytes]] = {cf: {} for cf in tables}
        self._sorted: dict[str, list[bytes] | None] = dict.fromkeys(tables)

    def get_many(self, cf: str, keys: Sequence[bytes]) -> list[bytes | None]:
        table = self._data[cf]
        return [table.get(k) for k in keys]

    def scan(self, cf: str, start: bytes, end: bytes) -> Iterator[tuple[bytes, bytes]]:
        keys = self._sorted[cf]
        if keys is None:
            keys = self._sorted[cf] = sorted(self._data[cf])
        table = self._data[cf]
        for key in keys[bisect.bisect_left(keys, start) : bisect.bisect_left(keys, end)]:
            yield key, table[key]

    def write(self, writes: WriteSet) -> None:
        for cf, key, value in writes.ops:
            if value is None:
                self._data[cf].pop(key, None)
            else:
                self._data[cf][key] = value
            self._sorted[cf] = None
        for cf, start, end in writes.ranges:
            for key in [k for k in self._data[cf] if start <= k < end]:
                del self._data[cf][key]
            self._sorted[cf] = None

    def ingest(self, cf: str, items: Iterable[tuple[bytes, bytes]]) -> int:
        writes = WriteSet()
        for key, value in items:
            writes.put(cf, key, value)
        self.write(writes)
        return len(writes.ops)

    def disk_bytes(self) -> int:
        return sum(len(k) + len(v) for t in self._data.values() for k, v in t.items())

    def close(self, keep: bool = True) -> None:
        """Nothing to release."""
