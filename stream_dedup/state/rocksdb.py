"""The RocksDB store (rocksdict): one column family per table of `store.COLUMN_FAMILIES`.

rocksdict raises bare exceptions; they are translated into `StateError` here and nowhere else.
Options follow the measurements in shared/design: raw byte keys, a sized block cache with a Bloom
filter per table (misses are the common case in dedup), index and filter blocks kept in that
cache only together with the sized cache (without one, scans were 28x slower). The tables whose
lookups mostly miss (anchors, blocks, ids) also keep a Bloom filter over their memtable: a miss
then skips the skiplist search, most of a lookup's cost while the recent state is in memory
(lookups 0.5x, writes 1.1x: the filter costs an insert a hash).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

from rocksdict import BlockBasedOptions, Cache, Options, Rdict, WriteBatch, WriteOptions

from ..errors import StateError
from .store import COLUMN_FAMILIES, WriteSet

_MOSTLY_MISSED = ("anchors", "blocks", "ids")
_MEMTABLE_BLOOM_RATIO = 0.02  # of the write buffer: 1.3 MB for a 64 MB memtable


def _options(cache: Cache, lookups_miss: bool = False) -> Options:
    table = BlockBasedOptions()
    table.set_block_cache(cache)
    table.set_bloom_filter(10, False)
    table.set_cache_index_and_filter_blocks(True)
    table.set_pin_l0_filter_and_index_blocks_in_cache(True)
    opts = Options(raw_mode=True)
    opts.set_block_based_table_factory(table)
    opts.create_if_missing(True)
    opts.create_missing_column_families(True)
    opts.set_max_background_jobs(2)
    if lookups_miss:
        opts.set_memtable_prefix_bloom_ratio(_MEMTABLE_BLOOM_RATIO)
        opts.set_memtable_whole_key_filtering(True)
    return opts


class RocksStore:
    """A `KVStore` in a RocksDB directory. One process at a time may open it."""

    def __init__(self, path: str, block_cache_mb: int = 256, sync: bool = False) -> None:
        self.path = path
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
        except OSError as exc:
            raise StateError(f"cannot create the state directory {path}: {exc.strerror}") from None
        cache = Cache(block_cache_mb << 20)
        opts = _options(cache)
        try:
            self._db = Rdict(path, opts, column_families={
                cf: _options(cache, cf in _MOSTLY_MISSED) for cf in COLUMN_FAMILIES
            })
        except Exception as exc:  # rocksdict raises bare exceptions
            text = str(exc)
            if "lock" in text.lower():
                text = "it is locked by another process (is another stream-dedup running?)"
            raise StateError(f"cannot open the state directory {path}: {text}") from None
        self._cfs = {cf: self._db.get_column_family(cf) for cf in COLUMN_FAMILIES}
        self._handles = {cf: self._db.get_column_family_handle(cf) for cf in COLUMN_FAMILIES}
        self._write_opts = WriteOptions()
        self._write_opts.sync = sync

    def get_many(self, cf: str, keys: Sequence[bytes]) -> list[bytes | None]:
        if not keys:
            return []
        try:
            return self._cfs[cf].get(list(keys))
        except Exception as exc:
            raise StateError(f"state read failed in {self.path}/{cf}: {exc}") from None

    def scan(self, cf: str, start: bytes, end: bytes) -> Iterator[tuple[bytes, bytes]]:
        try:
            for key, value in self._cfs[cf].items(from_key=start):
                if key >= end:
                    return
                yield key, value
        except Exception as exc:
            raise StateError(f"state scan failed in {self.path}/{cf}: {exc}") from None

    def write(self, writes: WriteSet) -> None:
        batch = WriteBatch(raw_mode=True)
        handles, put, delete = self._handles, batch.put, batch.delete  # ~10 ops a message
        for cf, key, value in writes.ops:
            if value is None:
                delete(key, handles[cf])
            else:
                put(key, value, handles[cf])
        for cf, start, end in writes.ranges:
            batch.delete_range(start, end, self._handles[cf])
        try:
            self._db.write(batch, self._write_opts)
        except Exception as exc:
            raise StateError(f"state write failed in {self.path}: {exc}") from None

    def disk_bytes(self) -> int:
        total = 0
        for root, _dirs, files in os.walk(self.path):
            for name in files:
                try:
                    total += os.path.getsize(os.path.join(root, name))
                except OSError:
                    continue  # a file compaction removed meanwhile
        return total

    def close(self) -> None:
        """Flush and release the directory lock (column-family views hold the DB open too)."""
        try:
            for cf in self._cfs.values():
                cf.close()
            self._db.close()
        except Exception as exc:
            raise StateError(f"closing the state in {self.path} failed: {exc}") from None
        self._cfs.clear()
        self._handles.clear()
