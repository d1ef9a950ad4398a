"""The exact stage: the hash that finds a message's exact repeats, and the Bloom filter whose
"present" is confirmed against the exact records before anything is called a duplicate."""

import numpy as np
import pytest

from stream_dedup.config import ExactSettings
from stream_dedup.engine.exact import (
    CHUNK_PREFIX,
    ExactStage,
    chunk_key,
    content_hash,
    exact_entry,
    exact_key,
    exact_value,
    text_hash,
)
from stream_dedup.state import MemoryStore
from stream_dedup.state.store import WriteSet

pytestmark = pytest.mark.unit
WINDOW_S = 3600.0


def stage(store: MemoryStore, rate: float = 500.0) -> ExactStage:
    return ExactStage(ExactSettings(expected_rate_per_s=rate), WINDOW_S, store)


def test_content_hash_is_of_the_normalized_text_or_else_of_the_raw_text() -> None:
    assert content_hash("好评", "#好评#") == content_hash("好评", "好评！！") == text_hash("好评")
    # Nothing left by normalization: only the same decoration repeats it ...
    assert content_hash("", " [哈哈] ") == content_hash("", "[哈哈]")
    assert content_hash("", "[哈哈]") != content_hash("", "[呵呵]")
    # ... and never a text whose normalized form is that decoration.
    assert content_hash("", "[哈哈]") != text_hash("[哈哈]")



def test_confirm_names_the_recorded_first_message_and_no_false_positive() -> None:
    store = MemoryStore(("meta", "exact"))
    writes = WriteSet()
    writes.put("exact", exact_key(text_hash("好评")), exact_value(7, "m7", "?"))
    store.write(writes)
    assert stage(store).confirm([text_hash("好评"), text_hash("差评")]) == [("m7", "?"), None]


@pytest.mark.parametrize("ending", ["", "?", "."])
def test_an_exact_record_holds_the_seq_id_and_ending_of_its_message(ending: str) -> None:
    assert exact_entry(exact_value(2**62 - 1, "消息-1", ending)) == (2**62 - 1, "消息-1", ending)


def test_a_record_written_without_an_ending_reads_as_none() -> None:
    assert exact_entry((7).to_bytes(8, "big") + b"m7") == (7, "m7", "")


def test_bloom_answers_present_for_what_it_was_given_and_in_the_same_batch() -> None:
    exact = stage(MemoryStore(("meta", "exact")))
    hashes = np.array([text_hash(t) for t in ("一", "二", "一")], np.uint64)
    ts = np.full(3, 1_700_000_000_000, np.int64)
    assert exact.maybe_seen(hashes, ts).tolist() == [False, False, True]
    assert exact.maybe_seen(hashes[:2], ts[:2]).tolist() == [True, True]


def test_a_snapshot_restores_the_filter_and_the_seq_it_covers() -> None:
    store = MemoryStore(("meta", "exact"))
    assert stage(store).restore() == 0  # no snapshot yet
    first = stage(store)
    ts = np.full(1, 1_700_000_000_000, np.int64)
    first.maybe_seen(np.array([text_hash("好评")], np.uint64), ts)
    writes = WriteSet()
    first.snapshot(41, writes)
    store.write(writes)
    again = stage(store)
    assert again.restore() == 41
    assert again.maybe_seen(np.array([text_hash("好评")], np.uint64), ts).tolist() == [True]
    resized = stage(store, rate=50_000.0)  # sized by another configuration: rebuilt instead
    assert resized.restore() == 0


def _snapshotted(store: MemoryStore, texts: list[str], rate: float) -> ExactStage:
    exact = stage(store, rate)
    hashes = np.array([text_hash(t) for t in texts], np.uint64)
    exact.maybe_seen(hashes, np.full(len(texts), 1_700_000_000_000, np.int64))
    writes = WriteSet()
    exact.snapshot(9, writes)
    store.write(writes)
    return exact


def test_a_snapshot_stores_only_the_chunks_with_bits_set() -> None:
    store = MemoryStore(("meta", "exact"))
    exact = _snapshotted(store, ["好评"], rate=50_000.0)  # ~20 chunks of bits
    chunks = [key for key, _ in store.scan("meta", CHUNK_PREFIX, chunk_key(2**32 - 1))]
    assert 1 <= len(chunks) <= exact.sizing.hashes < exact.bloom.words().nbytes >> 22
    again = stage(store, rate=50_000.0)
    assert again.restore() == 9
    assert np.array_equal(again.bloom.words(), exact.bloom.words())


def test_a_snapshot_torn_between_its_writes_is_not_used() -> None:
    """A crash after some chunks of a new snapshot were written leaves the old header over
    chunks of two snapshots: the CRC tells, and the filter is rebuilt from the records."""
    store = MemoryStore(("meta", "exact"))
    _snapshotted(store, ["好评"], rate=50_000.0)
    key, value = next(iter(store.scan("meta", CHUNK_PREFIX, chunk_key(2**32 - 1))))
    writes = WriteSet()
    writes.put("meta", key, bytes(len(value) - 1) + b"\x01")  # as a newer snapshot's chunk
    store.write(writes)
    assert stage(store, rate=50_000.0).restore() == 0


def test_the_chunks_of_a_larger_filter_configured_before_are_removed() -> None:
    store = MemoryStore(("meta", "exact"))
    writes = WriteSet()
    writes.put("meta", chunk_key(10_000), b"old")
    store.write(writes)
    _snapshotted(store, ["好评"], rate=500.0)
    assert store.get_many("meta", [chunk_key(10_000)]) == [None]


def test_text_hash_is_part_of_the_stored_format() -> None:
    """Exact records are keyed by it: a hash that changed between releases (or was salted per
    process, as Python's hash() is) would lose every stored record."""
    assert text_hash("好评") == 0x961FA8AE8AC422B6
