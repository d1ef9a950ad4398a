"""How block tables and anchor postings are stored in a `KVStore`, and their expiry.

A bucket (table, key) holds packed little-endian (fingerprint, seq) pairs, oldest first: its
newest in one value, older ones in sealed chunks when it grows past one (`chunks`). A query
already reads every bucket an insert will touch, so an insert appends to the entries it has in
hand (`probe.BatchProbe`) and writes only the head and what it seals: one or two multi-gets and
one write per batch. Anchor postings are packed
seqs, newest last, cut to the configured length.
"""

from __future__ import annotations

import struct

import numpy as np

from ...state.store import KVStore, WriteSet
from .chunks import read_buckets, rewrite
from .layout import Layout

ENTRY = np.dtype([("fp", "<u8"), ("seq", "<u8")])
_EMPTY_ENTRIES = np.zeros(0, dtype=ENTRY)
_EMPTY_SEQS = np.zeros(0, dtype="<u8")


_BUCKET_KEY = np.dtype([("table", "u1"), ("key", ">u8")])


def bucket_key(table: int, key: int) -> bytes:
    return struct.pack(">BQ", table, key)


def bucket_keys(table: int | np.ndarray, keys: np.ndarray) -> list[bytes]:
    """`bucket_key` of many keys at once, of one table or of each key's own table."""
    packed = np.empty(len(keys), dtype=_BUCKET_KEY)
    packed["table"], packed["key"] = table, keys
    return _split(packed.tobytes(), _BUCKET_KEY.itemsize)


def anchor_key(anchor: int) -> bytes:
    return struct.pack(">Q", anchor)


def anchor_keys(anchors: np.ndarray) -> list[bytes]:
    """`anchor_key` of many anchors at once."""
    return _split(anchors.astype(">u8").tobytes(), 8)


def _split(data: bytes, width: int) -> list[bytes]:
    """Cut packed keys apart: a void dtype's items are bytes (4x faster than slicing by hand)."""
    return np.frombuffer(data, dtype=np.dtype((np.void, width))).tolist()


def remove_entries(store: KVStore, layout: Layout, fps: np.ndarray, seqs: np.ndarray,
                   anchors: list[np.ndarray], writes: WriteSet) -> None:
    """Stage the removal of expired messages (`seqs`, with their fingerprints and posted
    anchors) from their buckets (`chunks.rewrite`) and postings; emptied values are deleted."""
    table_keys = layout.keys(fps)
    buckets = sorted({k for t, column in enumerate(table_keys) for k in bucket_keys(t, column)})
    values, sealed = read_buckets(store, buckets)
    for name, value in zip(buckets, values, strict=True):
        if value is not None:
            keep = ~np.isin(np.frombuffer(value, dtype=ENTRY)["seq"], seqs)
            if not keep.all():
                rewrite(name, keep.tolist(), value, sealed.get(name), writes)
    postings = sorted({k for arr in anchors for k in anchor_keys(arr)})
    for name, value in zip(postings, store.get_many("anchors", postings), strict=True):
        if value is None:
            continue
        entries = np.frombuffer(value, dtype="<u8")
        keep = ~np.isin(entries, seqs)
        if keep.all():
            continue
        if keep.any():
            writes.put("anchors", name, entries[keep].tobytes())
        else:
            writes.delete("anchors", name)
