"""Restoring a partition's state from its changelog, and the local checkpoint: only a directory
closed in sync is trusted, and a restore cut short starts again."""

from __future__ import annotations

import os

import pytest
from kafka.errors import KafkaConnectionError
from test_changelog import FakeProducer, backoff, two_docs

from stream_dedup.config import ScaleSettings, Settings, StateSettings
from stream_dedup.engine.stored import TABLES
from stream_dedup.kafka.retry import Backoff, CutShort
from stream_dedup.scale import checkpoint, restore
from stream_dedup.scale.changelog import ChangelogStore, to_writes
from stream_dedup.scale.restore import CheckpointMismatch, RestoreReport, open_state
from stream_dedup.state import MemoryStore, WriteSet

pytestmark = pytest.mark.unit


class FakeChangelog:
    """`restore.restore` over a FakeProducer's log: applies its records from `start_offset`
    and remembers where each restore started."""

    def __init__(self, producer: FakeProducer) -> None:
        self.producer = producer
        self.starts: list[int | None] = []

    def __call__(self, inner, settings, topic, partition, timeout_s, max_record_bytes=0,
                 start_offset=None, stopping=lambda: False) -> RestoreReport:
        self.starts.append(start_offset)
        if stopping():
            raise CutShort(f"restoring changelog {topic}/{partition}")
        records = [(k, v) for t, p, k, v in self.producer.log if (t, p) == (topic, partition)]
        if start_offset is not None and not 0 <= start_offset <= len(records):
            raise CheckpointMismatch(f"offset {start_offset} outside 0..{len(records)}")
        tail = records[start_offset or 0:]
        inner.write(to_writes(tail))
        return RestoreReport(len(tail), 0.0, 0, len(records), start_offset or 0)


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
    assert checkpoint.read(directory).offset == 2
    # Another owner writes two more records meanwhile.
    other = ChangelogStore(MemoryStore(TABLES), fake_changelog.producer, "cl", 0)
    two_docs(other, b"x", b"y")
    other.flush(1.0)
    store, report = open_state(ROCKS, directory, fake_changelog.producer, "cl", 0)
    assert not os.path.exists(checkpoint.path_of(directory))  # in use: no claim left
    assert fake_changelog.starts[-1] == 2 and report.records == 2
    assert store.get_many("docs", [b"1", b"2"]) == [b"x", b"y"]
    assert store.end_offset == 4
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
    partition, offset, age = 0, 2, 0.0
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
            f.write(f'{{"topic": "cl", "partition": 0, "offset": 2, '
                    f'"written_at": {found.written_at - age}}}')
    store, report = open_state(ROCKS, directory, fake_changelog.producer, "cl", 0)
    assert report.records == 2 and report.start_offset == 0  # the whole partition
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
    assert fake_changelog.starts == [None, None] and report.records == 2
    assert store.get_many("docs", [b"1", b"2"]) == [b"a", b"b"]
    store.close()


def test_a_stop_asked_cuts_the_restore_short(fake_changelog, tmp_path) -> None:
    stop = Backoff(0.01, 0.02, stopping=lambda: True)
    with pytest.raises(CutShort, match="restoring changelog c/0"):
        open_state(ROCKS, str(tmp_path / "p0"), fake_changelog.producer, "c", 0, stop)
