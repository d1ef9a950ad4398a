"""Block tables and anchor postings stored in a `KVStore`.

A bucket (table, key) is one value: packed little-endian (fingerprint, seq) pairs, oldest first.
A query already reads every bucket an insert will touch, so an insert appends to the value it has
in hand: one multi-get and one write per batch, no read-modify-write round trips. Anchor postings
are packed seqs, newest last, cut to the configured length.

Within one batch, messages see the entries of earlier messages of the same batch through the
batch's pending overlay, so a batch decides exactly as one-message-at-a-time processing would.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

import numpy as np

from ..state.store import KVStore, WriteSet
from .layout import Layout

ENTRY = np.dtype([("fp", "<u8"), ("seq", "<u8")])
_EMPTY_ENTRIES = np.zeros(0, dtype=ENTRY)
_EMPTY_SEQS = np.zeros(0, dtype="<u8")


_BUCKET_KEY = np.dtype([("table", "u1"), ("key", ">u8")])


def bucket_key(table: int, key: int) -> bytes:
    return struct.pack(">BQ", table, key)


def bucket_keys(table: int, keys: np.ndarray) -> list[bytes]:
    """`bucket_key` of many keys of one table at once."""
    packed = np.empty(len(keys), dtype=_BUCKET_KEY)
    packed["table"], packed["key"] = table, keys
    return _split(packed.tobytes(), _BUCKET_KEY.itemsize)


def anchor_key(anchor: int) -> bytes:
    return struct.pack(">Q", anchor)


def anchor_keys(anchors: np.ndarray) -> list[bytes]:
    """`anchor_key` of many anchors at once."""
    return _split(anchors.astype(">u8").tobytes(), 8)


def _split(data: bytes, width: int) -> list[bytes]:
    return [data[i : i + width] for i in range(0, len(data), width)]


class PendingTables:
    """The buckets and postings one batch reads, plus what the batch appends to them.

    Appends go to Python lists (cheap per message); `stage` packs each changed value once.
    """

    def __init__(self, store: KVStore, layout: Layout, postings: int) -> None:
        self._store = store
        self._layout = layout
        self._postings = postings
        self.buckets: dict[bytes, np.ndarray] = {}
        self.anchors: dict[bytes, np.ndarray] = {}
        self._added_entries: dict[bytes, list[tuple[int, int]]] = {}
        self._added_seqs: dict[bytes, list[int]] = {}
        self._changed: set[bytes] = set()

    def load(self, bucket_keys: Iterable[bytes], anchor_keys: Iterable[bytes]) -> None:
        """Read every bucket and posting the batch will query (one multi-get each)."""
        for cf, keys, target, empty, dtype in (
            ("blocks", bucket_keys, self.buckets, _EMPTY_ENTRIES, ENTRY),
            ("anchors", anchor_keys, self.anchors, _EMPTY_SEQS, np.dtype("<u8")),
        ):
            wanted = [k for k in dict.fromkeys(keys) if k not in target]
            for key, value in zip(wanted, self._store.get_many(cf, wanted), strict=True):
                target[key] = empty if value is None else np.frombuffer(value, dtype=dtype)

    def bucket(self, key: bytes) -> tuple[np.ndarray, list[tuple[int, int]]]:
        """Stored entries and the (fp, seq) pairs this batch added."""
        return self.buckets[key], self._added_entries.get(key, [])

    def posting(self, key: bytes) -> list[int]:
        """Seqs of the messages that carry this anchor, oldest first."""
        return self.anchors[key].tolist() + self._added_seqs.get(key, [])

    def insert(self, bucket_keys: Sequence[bytes], fp: int, seq: int,
               anchor_keys: Sequence[bytes]) -> None:
        for key in bucket_keys:
            self._added_entries.setdefault(key, []).append((fp, seq))
        for key in anchor_keys:
            self._added_seqs.setdefault(key, []).append(seq)

    def remove(self, seqs: np.ndarray) -> None:
        """Drop entries of expired messages from every loaded bucket and posting."""
        for target, field in ((self.buckets, "seq"), (self.anchors, None)):
            for key, value in target.items():
                keep = ~np.isin(value[field] if field else value, seqs)
                if not keep.all():
                    target[key] = value[keep]
                    self._changed.add(key)

    def stage(self, writes: WriteSet) -> None:
        """Add the changed buckets and postings to `writes` (emptied ones are deleted)."""
        for key, added in self._added_entries.items():
            flat = [v for entry in added for v in entry]
            writes.put("blocks", key,
                       self.buckets[key].tobytes() + struct.pack(f"<{len(flat)}Q", *flat))
        keep = self._postings * 8
        for key, seqs in self._added_seqs.items():
            merged = self.anchors[key].tobytes() + struct.pack(f"<{len(seqs)}Q", *seqs)
            writes.put("anchors", key, merged[-keep:])
        for cf, target, added in (("blocks", self.buckets, self._added_entries),
                                  ("anchors", self.anchors, self._added_seqs)):
            for key in (self._changed & target.keys()) - added.keys():
                value = target[key]
                if len(value):
                    writes.put(cf, key, value.tobytes())
                else:
                    writes.delete(cf, key)
        self._added_entries.clear()
        self._added_seqs.clear()
        self._changed.clear()

    def keys_of(self, fps: np.ndarray) -> list[list[bytes]]:
        """The bucket keys of each fingerprint, one per table."""
        table_keys = self._layout.keys(fps)
        return [
            [bucket_key(t, int(table_keys[t, i])) for t in range(len(table_keys))]
            for i in range(len(fps))
        ]
