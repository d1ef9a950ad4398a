"""The changelog encoding: what ChangelogStore sends rebuilds the same store (puts, deletes as
tombstones, range deletes expanded per key, the Bloom snapshot kept local), and flush's errors."""

from __future__ import annotations

import pytest

from stream_dedup.errors import ServiceError
from stream_dedup.scale.changelog import (
    LOCAL_ONLY,
    ChangelogStore,
    decode_key,
    encode_key,
    to_writes,
)
from stream_dedup.state import COLUMN_FAMILIES, MemoryStore, WriteSet

pytestmark = pytest.mark.unit


class _Meta:
    def __init__(self, offset: int) -> None:
        self.offset = offset


class _Future:
    def __init__(self, offset: int, error: Exception | None) -> None:
        self.value = _Meta(offset)
        self.exception = error

    def succeeded(self) -> bool:
        return self.exception is None


class FakeProducer:
    """Records every send; `fail_from` makes the sends from that offset on fail."""

    def __init__(self, fail_from: int | None = None) -> None:
        self.sent: list[tuple[str, int, bytes, bytes | None]] = []
        self.fail_from = fail_from
        self.flushes = 0

    def send(self, topic: str, key: bytes, value: bytes | None, partition: int) -> _Future:
        offset = len(self.sent)
        self.sent.append((topic, partition, key, value))
        failed = self.fail_from is not None and offset >= self.fail_from
        return _Future(offset, RuntimeError("refused") if failed else None)

    def flush(self, timeout: float) -> None:
        self.flushes += 1


def _content(store: MemoryStore) -> dict[str, list[tuple[bytes, bytes]]]:
    return {cf: list(store.scan(cf, b"", b"\xff" * 32)) for cf in COLUMN_FAMILIES}


def test_key_encoding_round_trips_every_family() -> None:
    for cf in COLUMN_FAMILIES:
        assert decode_key(encode_key(cf, b"k\x00ey")) == (cf, b"k\x00ey")
    assert encode_key("meta", b"x") != encode_key("exact", b"x")


def test_replaying_the_changelog_rebuilds_the_store() -> None:
    producer = FakeProducer()
    store = ChangelogStore(MemoryStore(), producer, "cl", 3)
    w = WriteSet()
    for i in range(10):
        w.put("ttl", bytes([i]), b"")
        w.put("docs", bytes([i]), b"doc%d" % i)
    w.put("meta", b"counters", b"c1")
    store.write(w)
    w = WriteSet()
    w.delete("docs", bytes([2]))  # a delete: a tombstone
    w.delete_range("ttl", b"", bytes([4]))  # a range delete: one tombstone per key present
    w.put("docs", bytes([5]), b"changed")
    w.put("ttl", bytes([1]) + b"new", b"")  # put and range-deleted in the same write
    store.write(w)
    store.flush(1.0)
    assert {(t, p) for t, p, _, _ in producer.sent} == {("cl", 3)}
    tombstones = [decode_key(k) for _, _, k, v in producer.sent if v is None]
    assert tombstones == [("docs", bytes([2])), ("ttl", bytes([0])), ("ttl", bytes([1])),
                          ("ttl", bytes([1]) + b"new"), ("ttl", bytes([2])), ("ttl", bytes([3]))]
    rebuilt = MemoryStore()
    rebuilt.write(to_writes((k, v) for _, _, k, v in producer.sent))
    assert _content(rebuilt) == _content(store.inner)
    assert list(rebuilt.scan("ttl", b"", b"\xff")) == [(bytes([i]), b"") for i in range(4, 10)]
    assert store.end_offset == len(producer.sent)


def test_meta_goes_first_and_the_bloom_snapshot_stays_local() -> None:
    producer = FakeProducer()
    store = ChangelogStore(MemoryStore(), producer, "cl", 0)
    w = WriteSet()
    w.put("docs", b"1", b"d")
    for cf, key in LOCAL_ONLY:
        w.put(cf, key, b"x" * (2 << 20))  # over Kafka's default 1 MB record limit
    w.put("meta", b"counters", b"c")
    store.write(w)
    assert [decode_key(k) for _, _, k, _ in producer.sent] == [("meta", b"counters"),
                                                                ("docs", b"1")]
    assert store.get_many("meta", [b"bloom"]) == [b"x" * (2 << 20)]


def test_flush_raises_for_people_when_a_record_was_refused() -> None:
    store = ChangelogStore(MemoryStore(), FakeProducer(fail_from=1), "cl", 2)
    w = WriteSet()
    w.put("docs", b"1", b"a")
    w.put("docs", b"2", b"b")
    store.write(w)
    with pytest.raises(ServiceError, match="changelog cl/2: a record was refused"):
        store.flush(1.0)


def test_flush_without_sends_waits_for_nothing() -> None:
    producer = FakeProducer()
    ChangelogStore(MemoryStore(), producer, "cl", 0).flush(1.0)
    assert producer.flushes == 0
