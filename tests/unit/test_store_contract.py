"""The same contract for the reference store and RocksDB."""

from pathlib import Path

import pytest

from stream_dedup.errors import StateError
from stream_dedup.state import MemoryStore, WriteSet, open_store

pytestmark = pytest.mark.unit


@pytest.fixture(params=["memory", "rocksdb"])
def store(request: pytest.FixtureRequest, tmp_path: Path):
    s = MemoryStore() if request.param == "memory" else open_store("rocksdb", str(tmp_path / "s"))
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


def test_rocksdb_refuses_a_second_opener(tmp_path: Path) -> None:
    first = open_store("rocksdb", str(tmp_path / "s"))
    with pytest.raises(StateError, match="locked by another process"):
        open_store("rocksdb", str(tmp_path / "s"))
    first.close()


def test_rocksdb_directory_is_owner_only(tmp_path: Path) -> None:
    s = open_store("rocksdb", str(tmp_path / "s"))
    s.close()
    assert (tmp_path / "s").stat().st_mode & 0o077 == 0


def test_rocksdb_memtable_bloom_only_where_lookups_miss(tmp_path: Path) -> None:
    s = open_store("rocksdb", str(tmp_path / "s"))
    s.close()
    text = max((tmp_path / "s").glob("OPTIONS-*")).read_text()
    filtered = {
        section.split('"')[1]
        for section in text.split("[CFOptions ")[1:]
        if "memtable_whole_key_filtering=true" in section
    }
    assert filtered == {"anchors", "blocks", "ids"}
