"""Durable state behind a small key-value contract (`store.KVStore`): RocksDB in production, a
dict-backed reference implementation for tests. The engine's tables are written against the
contract, never against rocksdict directly."""

from collections.abc import Collection

from .store import KVStore, MemoryStore, WriteSet

__all__ = ["KVStore", "MemoryStore", "WriteSet", "disk_bytes", "open_store"]


def open_store(backend: str, path: str, tables: Collection[str], block_cache_mb: int = 256,
               sync: bool = False, lookups_only: Collection[str] = (),
               index_block_kb: int = 4, index_bytes: int = 0, index_hits: bool = False) -> KVStore:
    """Open the configured backend (`state.backend`) with the user's `tables`; `lookups_only`:
    the tables the user reads by key only; `index_*`: what the block tables hold at capacity
    (`rocksdb.RocksStore`)."""
    if backend == "memory":
        return MemoryStore(tables)
    from .rocksdb import RocksStore

    return RocksStore(path, tables, block_cache_mb=block_cache_mb, sync=sync,
                      lookups_only=lookups_only, index_block_kb=index_block_kb,
                      index_bytes=index_bytes, index_hits=index_hits)


def disk_bytes(backend: str, path: str) -> int:
    """The size on disk of a store `open_store` opened at `path` (0: it keeps nothing there)."""
    if backend != "rocksdb":
        return 0
    from .rocksdb import directory_bytes

    return directory_bytes(path)
