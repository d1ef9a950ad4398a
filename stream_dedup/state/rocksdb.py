"""The RocksDB store (rocksdict): one column family per table its user names.

rocksdict raises bare exceptions; they are translated into `StateError` here and nowhere else.
Options chosen for a dedup workload: raw byte keys, a sized block cache with a Bloom
filter per table (misses are the common case in dedup), index and filter blocks kept in that
cache only together with the sized cache (without one, scans are many times slower). The tables
whose lookups mostly miss (anchors, blocks, ids) also keep a Bloom filter over their memtable: a
miss then skips the skiplist search, most of a lookup's cost while the recent state is in memory
(the filter costs an insert one hash).

Tables that a store's user reads by key only (`lookups_only`: the engine's anchor postings,
block tables and exact records) keep their memtable in a hash table of linked lists instead of
a skiplist: a skiplist insert or hit in a memtable of ~100k random keys is a walk of cache
misses, a bucket one or two, so the engine's state reads and writes get cheaper. The price is
iteration: a scan of such a table sorts a copy of its memtable, so stores whose users scan in
their hot path (the global scope's index shards) keep skiplists. A hash memtable cannot take
concurrent writes, which this store never makes (one writer, one write batch at a time): that
option is off for every table.

Size on disk: every table is compressed with zstd (RocksDB's default, Snappy, left the state
~1.7 times larger on the dev stream, see docs/operations.md); the stored messages (`docs`,
normalized texts, most of the state) in 16 KiB blocks with a zstd dictionary trained per file,
where texts share most of their words. The block tables, read one random bucket a lookup, are
in blocks of `state.index_block_kb`: 1 KiB makes a lookup in a table far larger than the cache
~3x cheaper than 4 KiB (measured on 3M fingerprints in 10 tables: 8 against 28 µs), for ~2% more
state on the dev stream. Block tables whose entries at the index's capacity (`index_bytes`)
outgrow the block cache are read so that a lookup costs one data block read from the page cache:
each file's index is held in memory by its reader (read once at open, ~20 bytes a 1 KiB block
of entries), not in the cache, where it competes with the data blocks and is read again in
pieces (a partitioned index; a whole index per lookup cost 1 ms at 100M stored), and their
data blocks bypass the block cache (RocksDB's `no_block_cache`): a cache a fraction of their
size hits a few lookups in a hundred, and its upkeep (a sharded LRU lookup, insert and eviction
a block) was half a lookup's cost, 40 against 21 µs a query at 10M stored, the files in the
page cache both times. Their blocks stay compressed with zstd: uncompressed (random
fingerprints, but keys' shared prefixes and zeroed sequence numbers compress), a 10M-entry state
took 1.8 times the space (297 against 168 bytes a fingerprint; LZ4 205), which at 100M would no
longer fit the page cache. When such tables' lookups also mostly find their
bucket (`index_hits`: the tables nearly full at capacity), the files a bulk load writes and the
last level, where compacted history sits, carry no Bloom filter (RocksDB's
`optimize_filters_for_hits`): a filter that nearly always says "maybe" only costs memory and a
probe. Tables the cache holds keep their index and filters in it: a probe of a cached filter costs
little, and spares a young state's misses.
The snapshots in `meta` are rewritten at every close, so that table is compacted then: a
restart leaves no stale copy behind. RocksDB keeps one info log (its `LOG`), not one more per
start.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass

from rocksdict import (
    BlockBasedOptions,
    Cache,
    DBCompressionType,
    IngestExternalFileOptions,
    MemtableFactory,
    Options,
    Rdict,
    ReadOptions,
    SliceTransform,
    SstFileWriter,
    WriteBatch,
    WriteOptions,
)

from ..errors import StateError
from .store import WriteSet

log = logging.getLogger(__name__)
_MOSTLY_MISSED = ("anchors", "blocks", "ids")
_SMALL_READS = ("blocks",)  # lookups of one bucket each, at random: `index_block_kb` blocks
_TEXTS = ("docs",)  # large values of similar text: larger blocks and a zstd dictionary
_TEXT_BLOCK_BYTES = 16 * 1024
_DICT_BYTES = 64 * 1024  # zstd dictionary of a file of `_TEXTS`, trained on 100 times that
# Of the available memory, the share a bulk load does not fill with its files' pages, and the
# bytes it reads at a time.
_READ_BACK_RESERVE = 0.125
_READ_BACK_CHUNK = 8 << 20
_REWRITTEN = ("meta",)  # whole values rewritten at every close: compacted then
# Their write buffer: a snapshot (~86 MB of Bloom filter) written through a 64 MB memtable would
# stay in memory until the close; through small ones it reaches the disk as it is written.
_REWRITTEN_BUFFER = 8 << 20
# ... compacted at a close only when they hold more than this (a snapshot: its old versions
# would pile up otherwise); a close without one (a file run's temporary state) does not wait on
# a compaction.
_COMPACT_FROM = 1 << 20
_INFO_LOGS = 1  # RocksDB's LOG, without a LOG.old.<time> per start
_MEMTABLE_BLOOM_RATIO = 0.02  # of the write buffer: 1.3 MB for a 64 MB memtable
# The first bytes of a key (all of a shorter one) pick its bucket: a hash (anchor, text) whole,
# a block-table bucket key whole (its table byte and 8-byte block), so the chunks sealed under it
# (the bucket key and a number) share its bucket.
_HASH_PREFIX = 9
_HASH_BUCKETS = 1 << 18  # ~1 key a bucket in a 64 MB memtable of anchor postings (2 MB)
# Keys a multi-get reads at most: rocksdict's cost a key grows with the keys of one call
# (several times over from a few hundred keys to tens of thousands), and a backlog's batch of
# 8,000 messages looks up ~40,000 anchors.
GET_CHUNK = 256
# Keys of one file a bulk load writes: its Bloom filter (10 bits a key) stays below a shard of
# the block cache (a 256 MB cache has 64 shards of 4 MB).
INGEST_FILE_KEYS = 1 << 20


@dataclass(frozen=True, slots=True)
class _BlockReads:
    """How the block tables (`_SMALL_READS`) are read (module docstring): their block size,
    whether they outgrow the block cache (their index then held in memory by each file's reader,
    their data blocks read past the cache),
    whether their lookups mostly hit (no Bloom filter in the files a bulk load or the last level
    holds)."""

    block_bytes: int
    large: bool = False
    hits: bool = False


def _options(cache: Cache, lookups_miss: bool = False, hashed: bool = False,
             texts: bool = False, rewritten: bool = False,
             small_reads: _BlockReads | None = None, filtered: bool = True) -> Options:
    large = small_reads is not None and small_reads.large
    table = BlockBasedOptions()
    if large:
        table.disable_cache()
    else:
        table.set_block_cache(cache)
    if texts:
        table.set_block_size(_TEXT_BLOCK_BYTES)
    if small_reads:
        table.set_block_size(small_reads.block_bytes)
    if filtered:
        table.set_bloom_filter(10, False)
    table.set_cache_index_and_filter_blocks(not large)
    table.set_pin_l0_filter_and_index_blocks_in_cache(not large)
    opts = Options(raw_mode=True)
    opts.set_block_based_table_factory(table)
    opts.create_if_missing(True)
    opts.create_missing_column_families(True)
    opts.set_max_background_jobs(2)
    opts.set_allow_concurrent_memtable_write(False)
    opts.set_keep_log_file_num(_INFO_LOGS)
    opts.set_compression_type(DBCompressionType.zstd())
    if texts:
        opts.set_compression_options(-14, 3, 0, _DICT_BYTES)  # window bits, level: zstd's own
        opts.set_zstd_max_train_bytes(100 * _DICT_BYTES)
    if hashed:
        opts.set_prefix_extractor(SliceTransform.create_max_len_prefix(_HASH_PREFIX))
        opts.set_memtable_factory(MemtableFactory.hash_link_list(_HASH_BUCKETS))
    if rewritten:
        opts.set_write_buffer_size(_REWRITTEN_BUFFER)
    if small_reads and small_reads.hits:
        opts.set_optimize_filters_for_hits(True)
    if lookups_miss:
        opts.set_memtable_prefix_bloom_ratio(_MEMTABLE_BLOOM_RATIO)
        opts.set_memtable_whole_key_filtering(True)
    return opts


class RocksStore:
    """A `KVStore` in a RocksDB directory. One process at a time may open it. `lookups_only`:
    the tables its user reads by key only; `index_bytes`, `index_hits`: the block tables' size at
    the index's capacity and whether their lookups then mostly find a bucket (module docstring)."""

    def __init__(self, path: str, tables: Collection[str], block_cache_mb: int = 256,
                 sync: bool = False, lookups_only: Collection[str] = (),
                 index_block_kb: int = 4, index_bytes: int = 0,
                 index_hits: bool = False) -> None:
        self.path = path
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
        except OSError as exc:
            raise StateError(f"cannot create the state directory {path}: {exc.strerror}") from None
        owner_only(path)
        cache = Cache(block_cache_mb << 20)
        opts = _options(cache)
        large = index_bytes > block_cache_mb << 20
        blocks = _BlockReads(index_block_kb << 10, large, large and index_hits)
        # Each table's options as `_options` arguments; a bulk load's files are written with
        # them too (`ingest`), without a filter where lookups mostly hit.
        self._shapes = {cf: (cache, cf in _MOSTLY_MISSED, cf in lookups_only, cf in _TEXTS,
                             cf in _REWRITTEN, blocks if cf in _SMALL_READS else None)
                        for cf in tables}
        try:
            self._db = Rdict(path, opts, column_families={cf: _options(*shape) for cf, shape
                                                          in self._shapes.items()})
        except Exception as exc:  # rocksdict raises bare exceptions
            text = str(exc)
            if f"{os.sep}LOCK" in text:  # its lock file; not "block" in a refused option
                text = "it is locked by another process (is another stream-dedup running?)"
            raise StateError(f"cannot open the state directory {path}: {text}") from None
        self._cfs = {cf: self._db.get_column_family(cf) for cf in tables}
        self._handles = {cf: self._db.get_column_family_handle(cf) for cf in tables}
        self._write_opts = WriteOptions()
        self._write_opts.sync = sync
        self._scan_opts = ReadOptions()
        self._scan_opts.set_total_order_seek(True)  # past the bucket of a hashed table's key

    def get_many(self, cf: str, keys: Sequence[bytes]) -> list[bytes | None]:
        """The values of `keys` (None where missing), read `GET_CHUNK` keys a call."""
        try:
            table = self._cfs[cf]
            values: list[bytes | None] = []
            for start in range(0, len(keys), GET_CHUNK):
                values += table.get(list(keys[start:start + GET_CHUNK]))
            return values
        except Exception as exc:
            raise StateError(f"state read failed in {self.path}/{cf}: {exc}") from None

    def scan(self, cf: str, start: bytes, end: bytes) -> Iterator[tuple[bytes, bytes]]:
        try:
            for key, value in self._cfs[cf].items(from_key=start, read_opt=self._scan_opts):
                if key >= end:
                    return
                yield key, value
        except Exception as exc:
            raise StateError(f"state scan failed in {self.path}/{cf}: {exc}") from None

    def write(self, writes: WriteSet) -> None:
        """One atomic write batch. The engine's ops come in runs of one table (its ids, buckets,
        postings): each run's table is made the batch's default once, not passed op by op
        (rocksdict converts the handle at every call: a fifth of a put's cost)."""
        batch = WriteBatch(raw_mode=True)
        put, delete, default = batch.put, batch.delete, batch.set_default_column_family
        handles, current = self._handles, None
        for cf, key, value in writes.ops:  # ~10 ops a message
            if cf != current:
                default(handles[cf])
                current = cf
            if value is None:
                delete(key)
            else:
                put(key, value)
        for cf, start, end in writes.ranges:
            batch.delete_range(start, end, self._handles[cf])
        try:
            self._db.write(batch, self._write_opts)
        except Exception as exc:
            raise StateError(f"state write failed in {self.path}: {exc}") from None

    def ingest(self, cf: str, items: Iterable[tuple[bytes, bytes]]) -> int:
        """Write the items into SST files in the state directory and move them into the table:
        no memtable, no log, no compaction of each write (RocksDB's bulk load; the keys must
        ascend, and ingesting keys the table holds replaces their values). A file holds at most
        `INGEST_FILE_KEYS` keys, so its Bloom filter fits a shard of the block cache (a file's
        filter that does not is read from disk at every lookup: ~100 times slower). The files
        are read back into the page cache as far as memory allows (`_read_back`)."""
        shape = self._shapes[cf]
        reads = shape[-1]
        ingest_opts = _options(*shape, filtered=not (reads and reads.hits))
        files: list[str] = []
        count = 0
        try:
            writer = None
            for key, value in items:
                if count % INGEST_FILE_KEYS == 0:
                    if writer is not None:
                        writer.finish()
                    files.append(os.path.join(self.path, f"ingest-{cf}-{len(files)}.sst"))
                    writer = SstFileWriter(ingest_opts)
                    writer.open(files[-1])
                writer[key] = value
                count += 1
            if writer is None:
                return 0
            writer.finish()
            _read_back(files)
            opts = IngestExternalFileOptions()
            opts.set_move_files(True)
            self._cfs[cf].ingest_external_file(files, opts)
        except Exception as exc:
            raise StateError(f"bulk load into {self.path}/{cf} failed: {exc}") from None
        finally:
            for path in files:
                if os.path.exists(path):
                    os.remove(path)
        return count

    def disk_bytes(self) -> int:
        return directory_bytes(self.path)

    def close(self, keep: bool = True) -> None:
        """Compact the tables rewritten at every close (`_REWRITTEN`) that hold a snapshot,
        flush and release the directory lock (column-family views hold the DB open too).
        `keep=False`, for a directory removed right after: nothing is written on the way out
        (the flush costs a large file run most of a second and its peak memory); what the
        memtables hold stays in the write-ahead log."""
        try:
            if keep:
                for name in _REWRITTEN:
                    table = self._cfs.get(name)
                    if table is not None and _held_bytes(table) > _COMPACT_FROM:
                        table.compact_range(None, None)
                for cf in self._cfs.values():
                    cf.close()
                self._db.close()
            else:  # stopped, RocksDB refuses the flush rocksdict asks for as it lets the DB go
                self._db.cancel_all_background(True)
        except Exception as exc:
            raise StateError(f"closing the state in {self.path} failed: {exc}") from None
        self._cfs.clear()
        self._handles.clear()
        if not keep:
            del self._db  # its last view: let go without a flush


def _read_back(files: Sequence[str]) -> None:
    """Read the files into the page cache while they fit in the memory the system has
    available, less `_READ_BACK_RESERVE` of it. RocksDB's file writer drops the pages of the
    files it writes, so without this a bulk-loaded state answers its first lookups from the disk
    (a random read each: a query ~5 times slower than from the page cache at 100M stored). Each
    file is read twice: a page read once sits on the kernel's inactive list, the first evicted
    as other files are read (5% of a 100M state was gone after one pass on a busy host); a
    second read moves it to the active list. A pass costs well under a second a GB."""
    budget = _available_bytes() * (1 - _READ_BACK_RESERVE)
    done, read = 0, 0
    buffer = bytearray(_READ_BACK_CHUNK)
    for path in files:
        size = os.path.getsize(path)
        if done + size > budget:
            break
        with open(path, "rb", buffering=0) as f:
            for _ in range(2):
                f.seek(0)
                while f.readinto(buffer):
                    pass
        done, read = done + size, read + 1
    log.info("bulk-loaded files read into the page cache files=%d of=%d bytes=%d",
             read, len(files), done)


def _available_bytes() -> int:
    """Memory the system can give without swapping (Linux `MemAvailable`; 0 elsewhere)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) << 10
    except OSError:
        pass
    return 0


def _held_bytes(table: Rdict) -> int:
    """Bytes a column family holds in memory and in its files."""
    return (table.property_int_value("rocksdb.cur-size-all-mem-tables")
            + table.property_int_value("rocksdb.total-sst-files-size"))


def owner_only(path: str) -> None:
    """Tighten a state directory that others may read or enter to owner-only (0700), saying so
    in one line; refuse it when that is not allowed. The state holds the texts' fingerprints and
    ids, and a new directory is made 0700."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
        if not mode & 0o077:
            return
        os.chmod(path, 0o700)
    except OSError as exc:
        raise StateError(f"the state directory {path} is open to other users and cannot be made "
                         f"owner-only: {exc.strerror} (chmod 700 it, or use another "
                         "state.path)") from None
    log.warning("state directory was open to other users, tightened to owner-only path=%s "
                "mode=%s now=0700", path, oct(mode))


def directory_bytes(path: str) -> int:
    """The size of the files under a state directory (read while RocksDB works in it)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                continue  # a file compaction removed meanwhile
    return total
