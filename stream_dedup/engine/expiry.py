"""Expiry: messages older than the window leave every table, oldest first.

The `ttl` column family is a TTL index keyed by (event time, seq); a sweep takes the oldest entries
behind the cutoff and undoes each message: its block-table entries and anchor postings (recomputed
from the stored normalized text by `features`, as the engine posted them, and salted again with
the scope salt `scope.recover` reads back),
its exact record (when it is still the one recorded), its doc and id, then range-deletes the
swept part of the index. The work per message matches an insert, so the state stays bounded under
an endless stream.
"""

from __future__ import annotations

import struct

import numpy as np

from ..config import Settings
from ..state.store import KVStore, WriteSet
from . import fingerprint as fpr
from . import scope
from .exact import exact_entry, exact_key
from .features import features
from .index.layout import Layout
from .index.tables import remove_entries
from .stored import Doc, seq_key, ttl_key


def expire(store: KVStore, settings: Settings, strategy: fpr.Strategy, layout: Layout,
           cutoff_ms: int, limit: int = 50_000) -> int:
    """Remove up to `limit` messages with event time before `cutoff_ms`; returns how many."""
    if cutoff_ms <= 0:
        return 0
    expired = []
    for key, _ in store.scan("ttl", b"", ttl_key(cutoff_ms, 0)):
        expired.append(key)
        if len(expired) >= limit:
            break
    if not expired:
        return 0
    seqs = [struct.unpack(">QQ", k)[1] for k in expired]
    docs = [
        Doc.decode(seq, data)
        for seq, data in zip(seqs, store.get_many("docs", [seq_key(s) for s in seqs]), strict=True)
        if data is not None
    ]
    writes = WriteSet()
    indexed = [d for d in docs if d.indexed]
    if indexed:
        texts = [d.text for d in indexed]
        plain, owner = strategy(texts)
        salts = scope.recover(np.array([d.fp for d in indexed], np.uint64), plain, owner)
        f = features(texts, salts, strategy, settings.fingerprint, settings.index)  # as inserted
        remove_entries(store, layout, f.fps,
                       np.array([d.seq for d in indexed], dtype=np.uint64)[owner],
                       [f.posted_anchors(i) for i in range(len(indexed))], writes)
    hashes = [exact_key(d.text_hash) for d in docs]
    for d, key, value in zip(docs, hashes, store.get_many("exact", hashes), strict=True):
        if value is not None and exact_entry(value)[0] == d.seq:
            writes.delete("exact", key)
    for d in docs:
        writes.delete("docs", seq_key(d.seq))
        writes.delete("ids", d.verdict.id.encode())
    writes.delete_range("ttl", b"", expired[-1] + b"\x00")
    store.write(writes)
    return len(docs)
