"""The changelog encoding: what ChangelogStore sends rebuilds the same store (puts, deletes as
tombstones, range deletes expanded per key, the Bloom snapshot kept local); flush's retries
(records not acknowledged are sent again, in order, with the service's backoff, until a
shutdown gives up)."""

from __future__ import annotations

import logging

import pytest
from kafka.errors import KafkaConnectionError, KafkaTimeoutError, MessageSizeTooLargeError

from stream_dedup.config import Settings
from stream_dedup.engine.exact import chunk_key
from stream_dedup.engine.snapshots import LOCAL_SNAPSHOTS
from stream_dedup.engine.stored import TABLES
from stream_dedup.errors import ServiceError
from stream_dedup.kafka.retry import Backoff, GaveUp
from stream_dedup.scale.changelog import (
    WRITE_END,
    ChangelogStore,
    after_last_end,
    decode_key,
    encode_key,
    rollback,
    to_writes,
)
from stream_dedup.state import MemoryStore, WriteSet

pytestmark = pytest.mark.unit


class _Meta:
    def __init__(self, offset: int) -> None:
        self.offset = offset


class _Future:
    """A FutureRecordMetadata: done (acked with an offset, or failed) once flushed."""

    def __init__(self, error: Exception | None) -> None:
        self.error = error
        self.is_done = False
        self.value: _Meta | None = None
        self.exception: Exception | None = None

    def complete(self, offset: int) -> None:
        self.is_done = True
        if self.error is None:
            self.value = _Meta(offset)
        else:
            self.exception = self.error

    def succeeded(self) -> bool:
        return self.is_done and self.exception is None


class FakeProducer:
    """Records every send (`sent`) and the records the broker took (`log`, whose index is the
    offset). The sends numbered in `fail` (from 0) fail with `error`, as does every send from
    `fail_from` on; the first `slow_flushes` flushes time out with the records in flight."""

    def __init__(self, fail_from: int | None = None, fail: tuple[int, ...] = (),
                 error: Exception | None = None, slow_flushes: int = 0) -> None:
        self.sent: list[tuple[str, int, bytes, bytes | None]] = []
        self.log: list[tuple[str, int, bytes, bytes | None]] = []
        self.fail_from = fail_from
        self.fail = fail
        self.error = error or RuntimeError("refused")
        self.slow_flushes = slow_flushes
        self.flushes = 0
        self._open: list[tuple[_Future, tuple[str, int, bytes, bytes | None]]] = []

    def send(self, topic: str, key: bytes, value: bytes | None, partition: int) -> _Future:
        n = len(self.sent)
        self.sent.append((topic, partition, key, value))
        failed = n in self.fail or (self.fail_from is not None and n >= self.fail_from)
        future = _Future(self.error if failed else None)
        self._open.append((future, (topic, partition, key, value)))
        return future

    def flush(self, timeout: float) -> None:
        self.flushes += 1
        if self.slow_flushes:
            self.slow_flushes -= 1
            raise KafkaTimeoutError("flush timed out")
        for future, record in self._open:
            future.complete(len(self.log))
            if future.error is None:
                self.log.append(record)
        self._open = []

    def close(self, timeout: float | None = None) -> None:
        """Nothing to release."""


def backoff(give_up=lambda: False, retries: list | None = None) -> Backoff:
    """The service's policy without the sleeping; `retries` collects what `on_retry` hears."""
    return Backoff(0.5, 10.0, give_up, sleep=lambda _s: None,
                   on_retry=lambda what, exc: (retries if retries is not None else []).append(
                       (what, exc)))


def two_docs(store: ChangelogStore, first: bytes = b"a", second: bytes = b"b") -> None:
    w = WriteSet()
    w.put("docs", b"1", first)
    w.put("docs", b"2", second)
    store.write(w)


def stored(records: list[tuple[str, int, bytes, bytes | None]]) -> list[bytes | None]:
    """The values of the records that are store writes (not a write's end)."""
    return [v for _, _, k, v in records if k != WRITE_END]


def restored_from(records: list[tuple[bytes, bytes | None]]) -> MemoryStore:
    """A store restored as `restore.restore` does: the records up to the last write's end
    applied, those after it (a torn write) set back."""
    store = MemoryStore(TABLES)
    complete = after_last_end(records)
    store.write(to_writes(records[:complete]))
    store.write(rollback(store, records[complete:]))
    return store


def _content(store: MemoryStore) -> dict[str, list[tuple[bytes, bytes]]]:
    return {cf: list(store.scan(cf, b"", b"\xff" * 32)) for cf in TABLES}


def test_key_encoding_round_trips_every_family() -> None:
    for cf in TABLES:
        assert decode_key(encode_key(cf, b"k\x00ey")) == (cf, b"k\x00ey")
    assert encode_key("meta", b"x") != encode_key("exact", b"x")


def test_replaying_the_changelog_rebuilds_the_store() -> None:
    producer = FakeProducer()
    store = ChangelogStore(MemoryStore(TABLES), producer, "cl", 3)
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
    rebuilt = MemoryStore(TABLES)
    rebuilt.write(to_writes((k, v) for _, _, k, v in producer.sent))
    assert _content(rebuilt) == _content(store.inner)
    assert list(rebuilt.scan("ttl", b"", b"\xff")) == [(bytes([i]), b"") for i in range(4, 10)]
    assert store.end_offset == len(producer.log) == len(producer.sent)


def test_meta_goes_first_and_the_bloom_snapshot_stays_local() -> None:
    producer = FakeProducer()
    store = ChangelogStore(MemoryStore(TABLES), producer, "cl", 0)
    w = WriteSet()
    w.put("docs", b"1", b"d")
    for cf, key in (*LOCAL_SNAPSHOTS, ("meta", chunk_key(0)), ("meta", chunk_key(7))):
        w.put(cf, key, b"x" * (2 << 20))  # over Kafka's default 1 MB record limit
    w.put("meta", b"counters", b"c")
    store.write(w)
    assert [decode_key(k) for _, _, k, _ in producer.sent[:-1]] == [("meta", b"counters"),
                                                                     ("docs", b"1")]
    assert producer.sent[-1][2] == WRITE_END
    assert store.get_many("meta", [b"bloom"]) == [b"x" * (2 << 20)]


def test_a_crash_mid_write_changes_no_verdict() -> None:
    """Whatever prefix of a batch's records reached the changelog before a crash, the batch
    replayed on the restored store, and the batch after it, get the verdicts (decision and
    matched id) of a run without the crash. A message whose doc was restored is replayed, so
    everything else of it (its index entries, the exact record that its repeats name, the TTL
    key that expires it) must reach the changelog before its doc; a message without its doc is
    decided again and must not find its own records from the torn write, not even through a
    false positive of the Bloom filter (rebuilt from the docs, it does not hold the message's
    hash: a filter that always hits stands for one that errs)."""
    from stream_dedup.engine.batch import Engine
    from stream_dedup.records import Message

    park = "今天的天气真的非常好我们去公园散步吧"
    hotel = "这家酒店的服务态度非常好，房间干净整洁，早餐品种丰富"
    laptop = "新款笔记本电脑的电池续航只有三个小时，键盘手感一般"
    first = [Message("a", park, 1000), Message("b", hotel, 2000)]
    batch = [Message("c", "今天天气真的非常好，我们一起去公园散步吧", 3000),
             Message("d", laptop, 4000), Message("e", hotel, 5000), Message("f", laptop, 5500),
             Message("g", laptop.replace("一般", "还算一般"), 5800)]
    after = [Message("h", laptop, 6000), Message("i", hotel.replace("品种", "品种也"), 7000),
             Message("j", laptop.replace("手感", "的手感"), 8000)]
    producer = FakeProducer()
    engine = Engine(Settings(), ChangelogStore(MemoryStore(TABLES), producer, "cl", 0))
    engine.process(first)
    before = len(producer.sent)

    def decided(verdicts) -> list[tuple[str, str, str | None]]:
        return [(v.id, str(v.decision), v.matched_id) for v in verdicts]

    expected = decided(engine.process(batch))
    expected_after = decided(engine.process(after))
    assert {d for _, d, _ in expected + expected_after} >= {"exact", "near", "unique"}
    records = [(k, v) for _, _, k, v in producer.sent]
    assert len(records) - before > 10
    for cut in range(before, len(records) + 1):
        again = Engine(Settings(), restored_from(records[:cut]))
        verdicts = again.process(batch)
        assert decided(verdicts) == expected, f"cut at record {cut}"
        assert decided(again.process(after)) == expected_after, f"cut at record {cut}"
        if cut == len(records):  # the whole write: every first verdict again
            assert all(v.replayed for v in verdicts)


def test_flush_raises_for_people_when_a_record_was_refused() -> None:
    store = ChangelogStore(MemoryStore(TABLES), FakeProducer(fail_from=1), "cl", 2)
    two_docs(store)
    with pytest.raises(ServiceError, match="changelog cl/2: a record was refused"):
        store.flush(1.0)


def test_flush_without_sends_waits_for_nothing() -> None:
    producer = FakeProducer()
    ChangelogStore(MemoryStore(TABLES), producer, "cl", 0).flush(1.0)
    assert producer.flushes == 0


def test_a_failed_flush_resends_from_the_first_unacknowledged_record_in_order(caplog) -> None:
    """The broker refuses the 2nd record once (it was away): the 2nd and everything after it
    are sent again, in order, so each key's last record is still its newest value."""
    producer = FakeProducer(fail=(1,), error=KafkaConnectionError("broker away"))
    retries: list = []
    store = ChangelogStore(MemoryStore(TABLES), producer, "cl", 0, backoff(retries=retries))
    two_docs(store)
    w = WriteSet()
    w.put("docs", b"2", b"newer")
    store.write(w)
    with caplog.at_level(logging.WARNING, "stream_dedup.kafka.retry"):
        store.flush(1.0)
    assert stored(producer.sent) == [b"a", b"b", b"newer", b"b", b"newer"]
    assert stored(producer.log) == [b"a", b"newer", b"b", b"newer"]
    assert store.end_offset == len(producer.log) and store.in_sync
    assert [what for what, _ in retries] == ["flushing changelog cl/0"]
    assert "flushing changelog cl/0 failed, retrying attempt=1" in caplog.text
    rebuilt = MemoryStore(TABLES)
    rebuilt.write(to_writes((k, v) for _, _, k, v in producer.log))
    assert _content(rebuilt) == _content(store.inner)


def test_records_in_flight_when_a_flush_times_out_are_waited_for_not_sent_twice() -> None:
    producer = FakeProducer(slow_flushes=3)
    store = ChangelogStore(MemoryStore(TABLES), producer, "cl", 0, backoff())
    two_docs(store)
    store.flush(0.5)
    assert len(producer.sent) == 3 and store.end_offset == 3  # two docs and the write's end


def test_a_retriable_send_error_leaves_the_records_to_flush() -> None:
    producer = FakeProducer()
    sends = producer.send

    def blocked_once(*args, **kwargs):
        producer.send = sends
        raise KafkaTimeoutError("buffer full")

    producer.send = blocked_once
    store = ChangelogStore(MemoryStore(TABLES), producer, "cl", 0, backoff())
    two_docs(store)
    assert producer.sent == [] and store.get_many("docs", [b"1"]) == [b"a"]
    store.flush(1.0)
    assert stored(producer.log) == [b"a", b"b"]


def test_a_shutdown_ends_the_retries_and_leaves_the_store_out_of_sync() -> None:
    producer = FakeProducer(fail_from=0, error=KafkaConnectionError("broker away"))
    asked = []

    def give_up() -> bool:
        asked.append(1)
        return len(asked) > 3

    store = ChangelogStore(MemoryStore(TABLES), producer, "cl", 0, backoff(give_up))
    two_docs(store)
    with pytest.raises(GaveUp, match="flushing changelog cl/0"):
        store.flush(1.0)
    assert not store.in_sync


def test_without_backoff_a_broker_away_is_an_error_for_people() -> None:
    producer = FakeProducer(fail_from=0, error=KafkaConnectionError("broker away"))
    store = ChangelogStore(MemoryStore(TABLES), producer, "cl", 1)
    two_docs(store)
    with pytest.raises(ServiceError, match="changelog cl/1: 3 records not acknowledged"):
        store.flush(1.0)


def test_a_refused_record_is_not_retried() -> None:
    producer = FakeProducer(fail=(0,), error=MessageSizeTooLargeError("too large"))
    store = ChangelogStore(MemoryStore(TABLES), producer, "cl", 0, backoff())
    two_docs(store)
    with pytest.raises(ServiceError, match=r"a record was refused: .*too large"):
        store.flush(1.0)
    assert len(producer.sent) == 3


def test_detach_drops_the_records_not_acknowledged() -> None:
    producer = FakeProducer(fail_from=0, error=KafkaConnectionError("away"))
    store = ChangelogStore(MemoryStore(TABLES), producer, "cl", 0, backoff())
    two_docs(store)
    store.detach()
    store.flush(1.0)
    assert len(producer.sent) == 3 and not store.in_sync
