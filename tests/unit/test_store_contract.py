"""The same contract for the reference store and RocksDB."""

import random
from pathlib import Path

import pytest

from stream_dedup.engine.stored import TABLES
from stream_dedup.state import MemoryStore, WriteSet, open_store
from stream_dedup.state.rocksdb import GET_CHUNK

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
