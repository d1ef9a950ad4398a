"""The same contract for the reference store and RocksDB."""

import random
from pathlib import Path

import pytest

from stream_dedup.engine.stored import TABLES
from stream_dedup.errors import StateError
from stream_dedup.state import MemoryStore, WriteSet, open_store
from stream_dedup.state.rocksdb import GET_CHUNK, directory_bytes

pytestmark = pytest.mark.unit


@pytest.fixture(params=["memory", "rocksdb", "rocksdb-hashed"])
def store(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "memory":
        s = MemoryStore(TABLES)
    else:  # "rocksdb-hashed": every table in hash memtables, scans included
        hashed = TABLES if request.param == "rocksdb-hashed" else ()
        s = open_store("rocksdb", str(tmp_path / "s"), TABLES, lookups_only=hashed)
    yield s
    s.close()


def test_put_get_scan_delete(store) -> None:
    w = WriteSet()
    for k in (b"a", b"b", b"c"):
        w.put("docs", k, k * 2)
    w.put("ids", b"a", b"other family")
    store.write(w)
    assert store.get_many("docs", [b"a", b"z"]) == [b"aa", None]
    assert list(store.scan("docs", b"b", b"z")) == [(b"b", b"bb"), (b"c", b"cc")]
    w = WriteSet()
    w.delete("docs", b"a")
    w.delete_range("docs", b"b", b"c")
    store.write(w)
    assert list(store.scan("docs", b"", b"\xff")) == [(b"c", b"cc")]
    assert store.get_many("ids", [b"a"]) == [b"other family"]


def test_a_read_of_many_keys_answers_each_in_order(store) -> None:
    # More keys than one RocksDB multi-get takes (`GET_CHUNK`), present and missing mixed.
    rng = random.Random(7)
    stored = {rng.randbytes(8): rng.randbytes(rng.randrange(1, 40)) for _ in range(700)}
    w = WriteSet()
    for k, v in stored.items():
        w.put("anchors", k, v)
    store.write(w)
    asked = [*stored, *(rng.randbytes(9) for _ in range(400))]
    rng.shuffle(asked)
    assert len(asked) > 4 * GET_CHUNK
    assert store.get_many("anchors", asked) == [stored.get(k) for k in asked]
    assert store.get_many("anchors", asked[:GET_CHUNK]) == [stored.get(k) for k in asked[:GET_CHUNK]]
    assert store.get_many("anchors", []) == []


def test_rocksdb_refuses_a_second_opener(tmp_path: Path) -> None:
    first = open_store("rocksdb", str(tmp_path / "s"), TABLES)
    with pytest.raises(StateError, match="locked by another process"):
        open_store("rocksdb", str(tmp_path / "s"), TABLES)
    first.close()


def test_rocksdb_directory_is_owner_only(tmp_path: Path) -> None:
    s = open_store("rocksdb", str(tmp_path / "s"), TABLES)
    s.close()
    assert (tmp_path / "s").stat().st_mode & 0o077 == 0


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


def families_whose_options_hold(path: Path, setting: str) -> set[str]:
    """The column families whose section of the store's latest OPTIONS file holds `setting`."""
    text = max(path.glob("OPTIONS-*")).read_text()
    return {
        section.split('"')[1] for section in text.split("[CFOptions ")[1:] if setting in section
    }


def test_rocksdb_memtable_bloom_only_where_lookups_miss(tmp_path: Path) -> None:
    open_store("rocksdb", str(tmp_path / "s"), TABLES).close()
    filtered = families_whose_options_hold(tmp_path / "s", "memtable_whole_key_filtering=true")
    assert filtered == {"anchors", "blocks", "ids"}


def test_rocksdb_hash_memtables_only_where_asked(tmp_path: Path) -> None:
    open_store("rocksdb", str(tmp_path / "s"), TABLES, lookups_only=("anchors", "exact")).close()
    hashed = families_whose_options_hold(tmp_path / "s", "id=HashLinkListRepFactory")
    assert hashed == {"anchors", "exact"}


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
