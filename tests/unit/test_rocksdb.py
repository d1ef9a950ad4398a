"""The RocksDB store on real files in a temporary directory: one opener at a time, a directory
only its owner reads, the options chosen per table, scans of hashed tables in key order, and
RocksDB's failures as `StateError` naming the state directory."""

import random
from pathlib import Path

import pytest
from rocks_options import families_whose_options_hold

from stream_dedup.engine.stored import TABLES
from stream_dedup.errors import StateError
from stream_dedup.state import WriteSet, disk_bytes, open_store, rocksdb
from stream_dedup.state.rocksdb import RocksStore, directory_bytes

pytestmark = pytest.mark.unit


def test_rocksdb_refuses_a_second_opener(tmp_path: Path) -> None:
    first = open_store("rocksdb", str(tmp_path / "s"), TABLES)
    with pytest.raises(StateError, match="locked by another process"):
        open_store("rocksdb", str(tmp_path / "s"), TABLES)
    first.close()


def test_rocksdb_directory_is_owner_only(tmp_path: Path) -> None:
    s = open_store("rocksdb", str(tmp_path / "s"), TABLES)
    s.close()
    assert (tmp_path / "s").stat().st_mode & 0o077 == 0


def test_rocksdb_memtable_bloom_only_where_lookups_miss(tmp_path: Path) -> None:
    open_store("rocksdb", str(tmp_path / "s"), TABLES).close()
    filtered = families_whose_options_hold(tmp_path / "s", "memtable_whole_key_filtering=true")
    assert filtered == {"anchors", "blocks", "ids"}


def test_rocksdb_hash_memtables_only_where_asked(tmp_path: Path) -> None:
    open_store("rocksdb", str(tmp_path / "s"), TABLES, lookups_only=("anchors", "exact")).close()
    hashed = families_whose_options_hold(tmp_path / "s", "id=HashLinkListRepFactory")
    assert hashed == {"anchors", "exact"}


HELD = "cache_index_and_filter_blocks=false"


def test_block_tables_hold_their_index_and_bypass_the_block_cache_only_past_it(
        tmp_path: Path) -> None:
    open_store("rocksdb", str(tmp_path / "a"), TABLES, block_cache_mb=8,
               index_bytes=8 << 20).close()
    assert families_whose_options_hold(tmp_path / "a", HELD) == set()
    assert families_whose_options_hold(tmp_path / "a", "no_block_cache=true") == set()
    open_store("rocksdb", str(tmp_path / "b"), TABLES, block_cache_mb=8,
               index_bytes=(8 << 20) + 1).close()
    assert families_whose_options_hold(tmp_path / "b", HELD) == {"blocks"}
    assert families_whose_options_hold(tmp_path / "b", "no_block_cache=true") == {"blocks"}


@pytest.mark.parametrize(("hits", "filtered"), [(True, False), (False, True)])
def test_bulk_loaded_block_files_carry_a_bloom_filter_only_where_lookups_mostly_miss(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hits: bool, filtered: bool) -> None:
    monkeypatch.setattr(rocksdb, "_read_back", lambda files: None)
    copies: list[bytes] = []  # the files' bytes, kept as they are ingested
    real = rocksdb.IngestExternalFileOptions

    def keeping() -> object:
        copies.extend(p.read_bytes() for p in tmp_path.glob("s/ingest-*"))
        return real()

    monkeypatch.setattr(rocksdb, "IngestExternalFileOptions", keeping)
    s = open_store("rocksdb", str(tmp_path / "s"), TABLES, block_cache_mb=1,
                   index_bytes=2 << 20, index_hits=hits)
    s.ingest("blocks", ((i.to_bytes(9, "big"), b"v" * 16) for i in range(5000)))
    s.close()
    assert copies
    assert all((b"BloomFilter" in data) == filtered for data in copies)


def test_bulk_load_reads_its_files_into_the_page_cache_as_far_as_memory_allows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    files = []
    for i, size in enumerate((3000, 3000, 3000)):
        files.append(str(tmp_path / f"f{i}"))
        Path(files[-1]).write_bytes(b"x" * size)
    monkeypatch.setattr(rocksdb, "_available_bytes", lambda: 8000)  # 7000 after the reserve
    with caplog.at_level("INFO"):
        rocksdb._read_back(files)
    assert "files=2 of=3 bytes=6000" in caplog.text


@pytest.mark.parametrize(("index_bytes", "hits", "skipping"), [
    (2 << 20, True, {"blocks"}), (2 << 20, False, set()), (1 << 20, True, set())])
def test_block_tables_skip_last_level_filters_only_when_large_and_lookups_mostly_hit(
        tmp_path: Path, index_bytes: int, hits: bool, skipping: set[str]) -> None:
    open_store("rocksdb", str(tmp_path / "s"), TABLES, block_cache_mb=1, index_bytes=index_bytes,
               index_hits=hits).close()
    assert families_whose_options_hold(tmp_path / "s", "optimize_filters_for_hits=true") == skipping


def test_large_block_tables_find_what_was_loaded_and_written_and_nothing_else(
        tmp_path: Path) -> None:
    """Bulk-loaded files (the last level, filters skipped) and written keys (the memtable, then
    a file of their own) are found across a reopen; absent keys are not."""
    rng = random.Random(5)
    keys = sorted({rng.randbytes(9) for _ in range(6000)})
    loaded, written, absent = keys[::3], keys[1::3], keys[2::3]
    w = WriteSet()
    for k in written:
        w.put("blocks", k, k[::-1])
    for reopen in (False, True):
        s = open_store("rocksdb", str(tmp_path / "s"), TABLES, block_cache_mb=1,
                       lookups_only=("blocks",), index_block_kb=1, index_bytes=2 << 20,
                       index_hits=True)
        if not reopen:
            assert s.ingest("blocks", ((k, k[::-1]) for k in loaded)) == len(loaded)
            s.write(w)
        assert s.get_many("blocks", keys) == [None if k in absent else k[::-1] for k in keys]
        s.close()


def test_hashed_table_scans_in_key_order_before_and_after_reopen(tmp_path: Path) -> None:
    """A scan of a hashed table crosses buckets in key order, in the memtable (a sorted copy)
    and in the files a reopen flushed it to; keys shorter than the bucket prefix included."""
    rng = random.Random(3)
    keys = sorted({rng.randbytes(rng.choice((3, 8, 9, 12))) for _ in range(3000)})
    w = WriteSet()
    for k in keys:
        w.put("blocks", k, k[::-1])
    for reopen in (False, True):
        s = open_store("rocksdb", str(tmp_path / "s"), TABLES, lookups_only=("blocks",))
        if not reopen:
            s.write(w)
        lo, hi = keys[500], keys[2500]
        assert list(s.scan("blocks", lo, hi)) == [(k, k[::-1]) for k in keys[500:2500]]
        found = s.get_many("blocks", [*keys[:50], b"\x00absent!"])
        assert found == [*(k[::-1] for k in keys[:50]), None]
        s.close()
def test_a_path_that_cannot_be_a_directory_is_a_state_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("in the way")
    with pytest.raises(StateError, match=r"cannot create the state directory .*file"):
        RocksStore(str(tmp_path / "file" / "s"), TABLES)


def test_a_closed_store_fails_with_a_state_error(tmp_path: Path) -> None:
    s = RocksStore(str(tmp_path / "s"), TABLES)
    s.close()
    with pytest.raises(StateError, match=r"state read failed in .*/s/docs"):
        s.get_many("docs", [b"a"])
    with pytest.raises(StateError, match="state scan failed"):
        list(s.scan("docs", b"", b"\xff"))


def test_writes_last_across_a_reopen_and_count_on_disk(tmp_path: Path) -> None:
    path = str(tmp_path / "s")
    s = RocksStore(path, TABLES, sync=True)
    empty = s.disk_bytes()
    w = WriteSet()
    for n in range(2000):
        w.put("docs", n.to_bytes(4, "big"), bytes(100))
    s.write(w)
    s.close()
    again = RocksStore(path, TABLES)
    assert again.get_many("docs", [(1999).to_bytes(4, "big"), (2000).to_bytes(4, "big")]) == [
        bytes(100), None]
    assert again.disk_bytes() > empty
    assert disk_bytes("rocksdb", path) == directory_bytes(path) and disk_bytes("memory", path) == 0
    again.close()


def test_a_store_not_kept_writes_no_file_on_the_way_out(tmp_path: Path) -> None:
    """Closed with keep=False (a directory removed right after), the memtables are not flushed
    into table files; the lock is released, and the writes are still in the write-ahead log."""
    path = str(tmp_path / "s")
    s = RocksStore(path, TABLES)
    w = WriteSet()
    for n in range(2000):
        w.put("docs", n.to_bytes(4, "big"), bytes(100))
    s.write(w)
    s.close(keep=False)
    assert not list((tmp_path / "s").glob("*.sst"))
    with pytest.raises(StateError, match="state read failed"):
        s.get_many("docs", [b"a"])
    again = RocksStore(path, TABLES)
    assert again.get_many("docs", [(1999).to_bytes(4, "big")]) == [bytes(100)]
    again.close()
    assert list((tmp_path / "s").glob("*.sst"))  # a store kept is flushed


def test_directory_bytes_sums_the_files_below(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(bytes(10))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b").write_bytes(bytes(32))
    assert directory_bytes(str(tmp_path)) == 42
    assert directory_bytes(str(tmp_path / "none")) == 0


def test_an_existing_rocksdb_directory_open_to_others_is_tightened(tmp_path: Path,
                                                                    caplog) -> None:
    (tmp_path / "s").mkdir(mode=0o755)
    (tmp_path / "s").chmod(0o755)
    open_store("rocksdb", str(tmp_path / "s"), TABLES).close()
    assert (tmp_path / "s").stat().st_mode & 0o777 == 0o700
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "tightened to owner-only" in said[0] and "mode=0o755" in said[0]
    open_store("rocksdb", str(tmp_path / "s"), TABLES).close()  # owner-only: nothing said
    assert len(caplog.records) == 1


def test_a_directory_that_cannot_be_tightened_is_refused(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "s").mkdir(mode=0o755)
    (tmp_path / "s").chmod(0o755)

    def refused(path: str, mode: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr("stream_dedup.state.rocksdb.os.chmod", refused)
    with pytest.raises(StateError, match="open to other users and cannot be made owner-only"):
        open_store("rocksdb", str(tmp_path / "s"), TABLES)


def test_restarts_that_rewrite_a_snapshot_leave_no_file_behind(tmp_path: Path) -> None:
    # The engine rewrites its snapshots in `meta` at every close (the Bloom filter: megabytes):
    # a stale copy, or a LOG.old per start, would grow the state by restarts.
    rng = random.Random(3)
    path = str(tmp_path / "s")
    sizes = []
    for _ in range(8):
        store = open_store("rocksdb", path, TABLES)
        w = WriteSet()
        w.put("meta", b"bloom", rng.randbytes(1 << 20))
        store.write(w)
        store.close()
        sizes.append(directory_bytes(path))
    assert sizes[-1] < sizes[0] * 1.05, sizes
    assert not list((tmp_path / "s").glob("LOG.old*"))
