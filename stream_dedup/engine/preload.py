"""Bulk load: a new state that holds a window of history, so a deployment starts with a full
window instead of an empty one.

History is taken as it was published, not decided again: every message is stored as the engine
stores a unique one (its doc, id, expiry entry, exact record, fingerprints and anchor postings),
except repeats of an earlier text (stored with the verdict the engine gives a repeat, out of the
index, as the engine does) and repeated ids (skipped: the engine would have replayed them).
Verification, most of the engine's time, is skipped, and the tables the history fills in order go
in as sorted SST files (`KVStore.ingest`): the stored messages a chunk at a time, the block tables
once at the end (`index.bulk`). Anchor postings, cut to the newest `index.anchor_postings`, are
written a chunk at a time. Opening an engine on the result afterwards records the layout and
rebuilds the Bloom filter from the exact records.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence

import numpy as np

from ..config import Settings
from ..errors import StateError
from ..records import Decision, Message, Verdict
from ..state.store import KVStore, WriteSet
from . import fingerprint as fpr
from . import mood, scope
from .batch import META_COUNTERS
from .exact import content_hash, exact_entry, exact_key, exact_value
from .features import features
from .index import bulk
from .index.layout import configured_layout
from .index.tables import anchor_keys
from .normalize import Normalizer
from .stored import encode_doc, seq_key, ttl_key
from .strategies import make_strategy
from .verdict import empty_verdict, repeat_verdict

CHUNK = 50_000  # messages normalized, fingerprinted and ingested together


class Preload:
    """Adds history to an empty state chunk by chunk; `finish` writes the block tables."""

    def __init__(self, settings: Settings, store: KVStore) -> None:
        if next(iter(store.scan("docs", seq_key(0), seq_key(2**64 - 1))), None) is not None:
            raise StateError("the state already holds messages: a bulk load builds a new one "
                             "(give an empty state directory)")
        self._settings = settings
        self._store = store
        self._layout = configured_layout(settings)
        self._normalizer = Normalizer(settings.normalize)
        self._strategy = make_strategy(settings.fingerprint)
        fpr.warm_up()
        self._next_seq, self._max_ts = 1, 0
        self._fps: list[np.ndarray] = []
        self._seqs: list[np.ndarray] = []
        self.stored = self.indexed = 0

    def add(self, messages: Sequence[Message]) -> None:
        """Store a chunk of history (in publishing order, after the chunks before it)."""
        known = {k for k, _ in _present(self._store, "ids", [m.id.encode() for m in messages])}
        fresh: dict[str, Message] = {}
        for m in messages:
            if m.id.encode() not in known:
                fresh.setdefault(m.id, m)
        batch = list(fresh.values())
        if not batch:
            return
        texts = self._normalizer.with_clauses([m.text for m in batch])[0]
        hashes = [content_hash(t, m.text) ^ scope.salt(m.scope)
                  for t, m in zip(texts, batch, strict=True)]
        seqs = list(range(self._next_seq, self._next_seq + len(batch)))
        self._next_seq += len(batch)
        earlier = dict(_present(self._store, "exact", [exact_key(h) for h in hashes]))
        first: dict[int, tuple[str, str]] = {}  # hash -> id and ending of its first message
        docs, exact, near = [], [], []
        for i, (m, text, h, seq) in enumerate(zip(batch, texts, hashes, seqs, strict=True)):
            stored = earlier.get(exact_key(h))
            matched = exact_entry(stored)[1:] if stored is not None else first.get(h)
            ending = mood.kept_ending(text, m.text)
            if matched is not None:
                verdict = repeat_verdict(m.id, matched[0], text, (matched[1], ending),
                                         self._settings.verify)
                docs.append((seq, encode_doc(m.timestamp_ms, 0, h, verdict, "", False)))
                continue
            first[h] = (m.id, ending)
            exact.append((exact_key(h), exact_value(seq, m.id, ending)))
            if text:
                near.append(i)
            else:
                docs.append((seq, encode_doc(m.timestamp_ms, 0, h, empty_verdict(m.id), "",
                                             False)))
        docs += self._index(batch, texts, hashes, seqs, near)
        docs.sort()
        s = self._store
        s.ingest("ids", sorted((m.id.encode(), seq_key(q)) for m, q in zip(batch, seqs,
                                                                               strict=True)))
        s.ingest("docs", ((seq_key(q), doc) for q, doc in docs))
        s.ingest("ttl", sorted((ttl_key(m.timestamp_ms, q), b"") for m, q in zip(batch, seqs,
                                                                                  strict=True)))
        s.ingest("exact", sorted(exact))
        self._max_ts = max(self._max_ts, max(m.timestamp_ms for m in batch))
        self.stored += len(batch)

    def _index(self, batch: list[Message], texts: list[str], hashes: list[int],
               seqs: list[int], near: list[int]) -> list[tuple[int, bytes]]:
        """The docs of the messages that go into the index; their fingerprints kept for
        `finish`, their anchors posted now."""
        if not near:
            return []
        s = self._settings
        salts = np.array([scope.salt(batch[i].scope) for i in near], np.uint64)
        f = features([texts[i] for i in near], salts, self._strategy, s.fingerprint, s.index)
        near_seqs = np.array([seqs[i] for i in near], dtype=np.uint64)
        self._fps.append(f.fps)
        self._seqs.append(near_seqs[f.owner])
        first_row = np.searchsorted(f.owner, np.arange(len(near)))
        self._post([f.posted_anchors(j) for j in range(len(near))], near_seqs)
        self.indexed += len(near)
        return [(seqs[i], encode_doc(batch[i].timestamp_ms, fp, hashes[i],
                                     _loaded(batch[i].id), texts[i], True))
                for i, fp in zip(near, f.fps[first_row].tolist(), strict=True)]

    def _post(self, anchors: list[np.ndarray], seqs: np.ndarray) -> None:
        """Append the seqs to their anchors' postings, cut to the newest `anchor_postings`."""
        counts = np.fromiter(map(len, anchors), np.int64, count=len(anchors))
        if not counts.sum():
            return
        flat, posters = np.concatenate(anchors), seqs.repeat(counts)
        order = flat.argsort(kind="stable")  # by anchor, then seq
        flat, posters = flat[order], posters[order]
        starts = fpr.run_starts(flat).nonzero()[0]
        names = anchor_keys(flat[starts])
        keep = self._settings.index.anchor_postings
        writes = WriteSet()
        for name, old, part in zip(names, self._store.get_many("anchors", names),
                                   np.split(posters, starts[1:]), strict=True):
            posting = np.concatenate([np.frombuffer(old or b"", "<u8"), part.astype("<u8")])
            writes.put("anchors", name, posting[-keep:].tobytes())
        self._store.write(writes)

    def finish(self, progress: Callable[[int], None] | None = None) -> int:
        """Write the block tables and the counters; returns the entries written (`progress`
        is called with those written so far)."""
        fps = np.concatenate(self._fps) if self._fps else np.zeros(0, np.uint64)
        seqs = np.concatenate(self._seqs) if self._seqs else np.zeros(0, np.uint64)
        self._fps, self._seqs = [], []
        bulk.load(self._store, self._layout, fps, seqs, progress)
        writes = WriteSet()
        writes.put("meta", META_COUNTERS, struct.pack(">Qq", self._next_seq, self._max_ts))
        self._store.write(writes)
        return len(fps) * len(self._layout.tables)


def _present(store: KVStore, cf: str, keys: list[bytes]) -> list[tuple[bytes, bytes]]:
    """(key, value) of the keys the table holds."""
    return [(k, v) for k, v in zip(keys, store.get_many(cf, keys), strict=True) if v is not None]


def _loaded(message_id: str) -> Verdict:
    return Verdict(message_id, Decision.UNIQUE, "unique: loaded with the history")
