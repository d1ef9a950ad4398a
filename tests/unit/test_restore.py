"""Restoring a partition's state from its changelog, and the local checkpoint: only a directory
closed in sync is trusted, and a restore cut short starts again."""

from __future__ import annotations

import os
from types import SimpleNamespace
from unittest.mock import patch

import pytest
from kafka.errors import KafkaConnectionError
from test_changelog import FakeProducer, backoff, two_docs

from stream_dedup.config import ScaleSettings, Settings, StateSettings
from stream_dedup.engine.stored import TABLES
from stream_dedup.errors import ServiceError
from stream_dedup.kafka.retry import Backoff, CutShort
from stream_dedup.scale import checkpoint, restore
from stream_dedup.scale.changelog import WRITE_END, ChangelogStore
from stream_dedup.scale.restore import TAIL_RECORDS, RestoreReport, open_state
from stream_dedup.state import MemoryStore, WriteSet

pytestmark = pytest.mark.unit


class FakeReader:
    """The changelog reader `restore.restore` uses (a KafkaConsumer), over a FakeProducer's
    log: a record's offset is its index among its partition's records."""

    def __init__(self, producer: FakeProducer, per_poll: int = 2) -> None:
        self.producer = producer
        self.per_poll = per_poll
        self.at: dict = {}

    def records(self, tp) -> list[tuple[bytes, bytes | None]]:
        return [(k, v) for t, p, k, v in self.producer.log if (t, p) == (tp.topic, tp.partition)]

    def assign(self, tps) -> None:
        self.at = dict.fromkeys(tps, 0)

    def end_offsets(self, tps) -> dict:
        return {tp: len(self.records(tp)) for tp in tps}

    def beginning_offsets(self, tps) -> dict:
        return dict.fromkeys(tps, 0)

    def seek(self, tp, offset: int) -> None:
        self.at[tp] = offset

    def position(self, tp) -> int:
        return self.at[tp]

    def poll(self, timeout_ms: int) -> dict:
        got = {}
        for tp, at in self.at.items():
            part = self.records(tp)[at:at + self.per_poll]
            if part:
                got[tp] = [SimpleNamespace(offset=at + i, key=k, value=v)
                           for i, (k, v) in enumerate(part)]
                self.at[tp] = at + len(part)
        return got

    def close(self) -> None:
        """Nothing to release."""


class FakeChangelog:
    """`restore.restore` reading a FakeProducer's log (`FakeReader`); remembers where each
    restore started."""

    def __init__(self, producer: FakeProducer) -> None:
        self.producer = producer
        self.starts: list[int | None] = []

    def __call__(self, inner, settings, topic, partition, timeout_s, max_record_bytes=0,
                 start_offset=None, stopping=lambda: False) -> RestoreReport:
        self.starts.append(start_offset)
        with patch.object(restore, "_reader", lambda *_: FakeReader(self.producer)):
            return REAL_RESTORE(inner, settings, topic, partition, timeout_s,
                                max_record_bytes, start_offset, stopping)


REAL_RESTORE = restore.restore


@pytest.fixture
def fake_changelog(monkeypatch) -> FakeChangelog:
    fake = FakeChangelog(FakeProducer())
    monkeypatch.setattr(restore, "restore", fake)
    return fake


ROCKS = Settings(state=StateSettings(backend="rocksdb"))


def test_a_clean_close_in_sync_lets_the_next_open_restore_only_the_tail(
        tmp_path, fake_changelog) -> None:
    directory = str(tmp_path / "in-0")
    store, report = open_state(ROCKS, directory, fake_changelog.producer, "cl", 0)
    assert fake_changelog.starts == [None] and report.records == 0
    two_docs(store)
    store.flush(1.0)
    store.close()
    assert checkpoint.read(directory).offset == 3  # two docs and the write's end
    # Another owner writes two more records meanwhile.
    other = ChangelogStore(MemoryStore(TABLES), fake_changelog.producer, "cl", 0)
    two_docs(other, b"x", b"y")
    other.flush(1.0)
    store, report = open_state(ROCKS, directory, fake_changelog.producer, "cl", 0)
    assert not os.path.exists(checkpoint.path_of(directory))  # in use: no claim left
    assert fake_changelog.starts[-1] == 3 and report.records == 3
    assert store.get_many("docs", [b"1", b"2"]) == [b"x", b"y"]
    assert store.end_offset == 6
    store.close()


def test_a_directory_left_by_a_crash_is_restored_in_full(tmp_path, fake_changelog) -> None:
    directory = str(tmp_path / "in-0")
    store, _ = open_state(ROCKS, directory, fake_changelog.producer, "cl", 0)
    two_docs(store)
    store.flush(1.0)
    store.close()
    store, _ = open_state(ROCKS, directory, fake_changelog.producer, "cl", 0)
    w = WriteSet()
    w.put("docs", b"3", b"local only")  # written, never acknowledged, then the process dies
    store.inner.write(w)
    store.inner.close()  # (a crash: no ChangelogStore.close)
    store, _ = open_state(ROCKS, directory, fake_changelog.producer, "cl", 0)
    assert fake_changelog.starts[-1] is None
    assert store.get_many("docs", [b"1", b"3"]) == [b"a", None]
    store.close()


@pytest.mark.parametrize("unsynced", ["pending", "detached"])
def test_a_store_out_of_sync_writes_no_checkpoint(tmp_path, fake_changelog, unsynced) -> None:
    directory = str(tmp_path / "in-0")
    store, _ = open_state(ROCKS, directory, fake_changelog.producer, "cl", 0)
    if unsynced == "detached":
        store.detach()
    two_docs(store)  # never flushed
    store.close()
    assert checkpoint.read(directory) is None


@pytest.mark.parametrize("bad", ["other partition", "too old", "offset past the end"])
def test_a_checkpoint_that_cannot_be_trusted_is_not_used(tmp_path, fake_changelog, bad) -> None:
    directory = str(tmp_path / "in-0")
    store, _ = open_state(ROCKS, directory, fake_changelog.producer, "cl", 0)
    two_docs(store)
    store.flush(1.0)
    store.close()
    partition, offset, age = 0, 3, 0.0
    if bad == "other partition":
        partition = 1
    elif bad == "too old":
        age = ScaleSettings().checkpoint_max_age_s + 60
    else:
        offset = 99  # the changelog topic was recreated
    checkpoint.write(directory, "cl", partition, offset)
    if age:
        found = checkpoint.read(directory)
        os.remove(checkpoint.path_of(directory))
        with open(checkpoint.path_of(directory), "w") as f:
            f.write(f'{{"topic": "cl", "partition": 0, "offset": 3, '
                    f'"written_at": {found.written_at - age}}}')
    store, report = open_state(ROCKS, directory, fake_changelog.producer, "cl", 0)
    assert report.records == 3 and report.start_offset == 0  # the whole partition
    assert store.get_many("docs", [b"1"]) == [b"a"]
    store.close()


def test_checkpoints_are_off_at_age_zero_and_for_memory_state(tmp_path, fake_changelog) -> None:
    off = Settings(state=StateSettings(backend="rocksdb"),
                   scale=ScaleSettings(checkpoint_max_age_s=0))
    for settings in (off, Settings(state=StateSettings(backend="memory"))):
        directory = str(tmp_path / settings.state.backend)
        store, _ = open_state(settings, directory, fake_changelog.producer, "cl", 0)
        two_docs(store)
        store.flush(1.0)
        store.close()
        assert checkpoint.read(directory) is None


def test_a_restore_cut_by_the_broker_going_away_starts_again(tmp_path, fake_changelog,
                                                             monkeypatch) -> None:
    two_docs(ChangelogStore(MemoryStore(TABLES), fake_changelog.producer, "cl", 0))
    fake_changelog.producer.flush(1.0)
    cuts = [KafkaConnectionError("broker away")]

    def cut_once(inner, *args, **kwargs) -> RestoreReport:
        report = fake_changelog(inner, *args, **kwargs)  # applied, then the connection drops
        if cuts:
            raise cuts.pop()
        return report

    monkeypatch.setattr(restore, "restore", cut_once)
    retries: list = []
    store, report = open_state(ROCKS, str(tmp_path / "in-0"), fake_changelog.producer, "cl", 0,
                               backoff(retries=retries))
    assert [what for what, _ in retries] == ["restoring changelog cl/0"]
    assert fake_changelog.starts == [None, None] and report.records == 3
    assert store.get_many("docs", [b"1", b"2"]) == [b"a", b"b"]
    store.close()


def test_a_stop_asked_cuts_the_restore_short(fake_changelog, tmp_path) -> None:
    two_docs(ChangelogStore(MemoryStore(TABLES), fake_changelog.producer, "c", 0))
    fake_changelog.producer.flush(1.0)
    stop = Backoff(0.01, 0.02, stopping=lambda: True)
    with pytest.raises(CutShort, match="restoring changelog c/0"):
        open_state(ROCKS, str(tmp_path / "p0"), fake_changelog.producer, "c", 0, stop)


def tear(producer: FakeProducer) -> None:
    """Drop the last write's end from the log, as if the process died before it was sent."""
    assert producer.log[-1][2] == WRITE_END
    producer.log.pop()


@pytest.mark.parametrize("span", [TAIL_RECORDS, 1])
def test_a_write_torn_by_a_crash_is_set_back_in_the_state_and_the_changelog(
        tmp_path, fake_changelog, monkeypatch, span) -> None:
    """The records of a write whose end never reached the changelog are not applied; the
    restoring process writes their keys' earlier values (or tombstones) after them, so the
    next restore, which finds that write's end, gets the same state. A span of 1 reads the
    tail back one record, then two, ... until a write's end."""
    monkeypatch.setattr(restore, "TAIL_RECORDS", span)
    producer = fake_changelog.producer
    first = ChangelogStore(MemoryStore(TABLES), producer, "cl", 0)
    two_docs(first)
    first.flush(1.0)
    w = WriteSet()
    w.put("docs", b"2", b"torn")
    w.put("docs", b"3", b"torn")
    w.put("meta", b"counters", b"torn")
    first.write(w)
    first.flush(1.0)
    tear(producer)
    store, report = open_state(ROCKS, str(tmp_path / "a"), producer, "cl", 0)
    assert report.records == 3 and len(report.torn) == 3
    assert store.get_many("docs", [b"1", b"2", b"3"]) == [b"a", b"b", None]
    assert store.get_many("meta", [b"counters"]) == [None]
    assert store.in_sync and store.end_offset == len(producer.log)
    assert producer.log[-1][2] == WRITE_END
    store.close()
    again, report = open_state(ROCKS, str(tmp_path / "b"), producer, "cl", 0)
    assert report.torn == ()
    assert again.get_many("docs", [b"1", b"2", b"3"]) == [b"a", b"b", None]
    again.close()


def test_records_after_a_checkpoint_without_a_write_end_are_all_torn(
        tmp_path, fake_changelog) -> None:
    directory = str(tmp_path / "in-0")
    store, _ = open_state(ROCKS, directory, fake_changelog.producer, "cl", 0)
    two_docs(store)
    store.flush(1.0)
    store.close()
    other = ChangelogStore(MemoryStore(TABLES), fake_changelog.producer, "cl", 0)
    two_docs(other, b"x", b"y")
    other.flush(1.0)
    tear(fake_changelog.producer)
    store, report = open_state(ROCKS, directory, fake_changelog.producer, "cl", 0)
    assert fake_changelog.starts[-1] == 3 and report.records == 0 and len(report.torn) == 2
    assert store.get_many("docs", [b"1", b"2"]) == [b"a", b"b"]
    store.close()


def test_a_changelog_without_write_ends_is_applied_whole(tmp_path, fake_changelog) -> None:
    """Written before writes had ends: nothing can be told torn."""
    producer = fake_changelog.producer
    two_docs(ChangelogStore(MemoryStore(TABLES), producer, "cl", 0))
    producer.flush(1.0)
    tear(producer)
    store, report = open_state(ROCKS, str(tmp_path / "a"), producer, "cl", 0)
    assert report.records == 2 and report.torn == ()
    assert store.get_many("docs", [b"1", b"2"]) == [b"a", b"b"]
    store.close()


def test_a_restore_out_of_time_says_which_setting_to_raise(tmp_path, fake_changelog) -> None:
    two_docs(ChangelogStore(MemoryStore(TABLES), fake_changelog.producer, "cl", 0))
    fake_changelog.producer.flush(1.0)
    slow = Settings(state=StateSettings(backend="rocksdb"),
                    scale=ScaleSettings(restore_timeout_s=0.0))
    with pytest.raises(ServiceError, match=r"restoring changelog cl/0 did not reach offset 3 "
                                           r"within 0 s \(at 0\): raise scale.restore_timeout_s"):
        open_state(slow, str(tmp_path / "a"), fake_changelog.producer, "cl", 0)
