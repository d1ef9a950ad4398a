"""What the engine keeps across a restart besides its records: the state's format version, and
snapshots of what the records determine (the Bloom filter, the boilerplate sketch), rebuilt from
the records when a snapshot is missing or older than they are."""

from __future__ import annotations

import logging
import struct
from typing import cast

import numpy as np

from ..config import Settings
from ..records import Decision, Verdict
from ..state.store import KVStore, WriteSet
from . import scope
from .commonness import Commonness
from .exact import CHUNK_PREFIX, SNAPSHOT_KEY, ExactStage
from .fingerprint import Strategy
from .index.layout import Layout
from .stored import Doc, seq_key

FORMAT_VERSION = 1
_META_FORMAT = b"format"
_META_COMMON = b"common"
_META_LAYOUT = b"layout"  # (k, blocks) of the block tables the state was built with
log = logging.getLogger(__name__)
REBUILD_CHUNK = 100_000  # stored messages read back at a time
# Snapshots of what the state's records determine (the Bloom filter, the boilerplate sketch),
# rebuilt from them when missing: caches, which a changelog of the state need not carry. The
# Bloom filter's bits are under keys of their own (`CHUNK_PREFIX`).
LOCAL_SNAPSHOTS = frozenset({("meta", SNAPSHOT_KEY), ("meta", _META_COMMON)})


def local_only(cf: str, key: bytes) -> bool:
    """Whether (cf, key) holds a snapshot, or a part of one."""
    return (cf, key) in LOCAL_SNAPSHOTS or (cf == "meta" and key.startswith(CHUNK_PREFIX))


class Snapshots:
    """The engine's part that opens and checkpoints its state (`batch.Engine` is one)."""

    settings: Settings
    store: KVStore
    exact: ExactStage
    commonness: Commonness | None
    _strategy: Strategy
    _next_seq: int

    def _check_format(self) -> None:
        from ..errors import StateError

        stored = self.store.get_many("meta", [_META_FORMAT])[0]
        if stored is None:
            writes = WriteSet()
            writes.put("meta", _META_FORMAT, struct.pack(">I", FORMAT_VERSION))
            self.store.write(writes)
        elif struct.unpack(">I", stored)[0] != FORMAT_VERSION:
            raise StateError(
                f"the state was written by format version {struct.unpack('>I', stored)[0]}; "
                f"this stream-dedup reads version {FORMAT_VERSION}: use a new state.path"
            )

    def _check_layout(self, layout: Layout, capacity: int) -> None:
        """Say which block-table layout the engine uses and its cost; refuse a state whose
        tables were built with another one (their buckets are keyed on other bits: probing them
        would miss pairs). A state without the record, written before layouts were sized, is
        taken to match."""
        from ..errors import StateError

        mine = struct.pack(">BB", layout.max_distance, layout.blocks_count)
        stored = self.store.get_many("meta", [_META_LAYOUT])[0]
        if stored is not None and stored != mine:
            k, r = struct.unpack(">BB", stored)
            raise StateError(
                f"index.capacity {capacity:,} needs {len(layout.tables)} block tables "
                f"({layout.blocks_count} blocks, k={layout.max_distance}) but the state holds "
                f"tables of {r} blocks, k={k}: set index.capacity (or index.layout, "
                "index.max_distance) as when it was built, or build a new state.path "
                "(stream-dedup bulk-load)")
        if stored is None:
            writes = WriteSet()
            writes.put("meta", _META_LAYOUT, mine)
            self.store.write(writes)
        log.info("index layout: %s", layout.describe(capacity))

    def _restore_commonness(self, covered: int) -> tuple[Commonness | None, int]:
        """The stream's boilerplate sketch (when the rule that reads it is on) and the seq up to
        which it counted: its snapshot when it was taken with the Bloom filter's, else empty,
        to be counted again from the first stored message."""
        vs = self.settings.verify
        if "added" not in vs.meaning_classes:
            return None, 2**64 - 1
        data = self.store.get_many("meta", [_META_COMMON])[0]
        seq = struct.unpack_from(">Q", data)[0] if data else -1
        restored = (Commonness.restore(data[8:], vs.boilerplate_messages,
                                       vs.boilerplate_generation) if seq == covered else None)
        if restored is None:
            return Commonness(vs.boilerplate_messages, vs.boilerplate_generation), 0
        return restored, covered

    def _rebuild(self, covered: int, counted: int) -> None:
        """Add to the Bloom filter every exact record written after its snapshot, and count in
        the boilerplate sketch every message stored after its own, in order, as the batches
        that stored them did."""
        hashes, stamps, to_count = [], [], []
        for key, value in self.store.scan("docs", seq_key(min(covered, counted) + 1),
                                          seq_key(2**64 - 1)):
            seq = struct.unpack(">Q", key)[0]
            doc = Doc.decode(seq, value)
            if seq > counted and doc.indexed and self.commonness is not None:
                to_count.append(doc)
                if len(to_count) >= REBUILD_CHUNK:
                    self._count(to_count)
                    to_count = []
            if seq <= covered:
                continue
            hashes.append(doc.text_hash)
            stamps.append(doc.ts_ms)
            if len(hashes) >= REBUILD_CHUNK:
                self.exact.bloom.add(np.array(hashes, np.uint64), np.array(stamps, np.int64))
                hashes, stamps = [], []
        if to_count:
            self._count(to_count)
        if hashes:
            self.exact.bloom.add(np.array(hashes, np.uint64), np.array(stamps, np.int64))

    def _count(self, docs: list[Doc]) -> None:
        """Count stored messages in the boilerplate sketch, in order, each under the scope salt
        it was counted with (`scope.salt`), read back from its stored fingerprint."""
        sketch = cast(Commonness, self.commonness)
        texts = [d.text for d in docs]
        plain, owner = self._strategy(texts)
        salts = scope.recover(np.array([d.fp for d in docs], np.uint64), plain, owner)
        for doc, grams, salt in zip(docs, sketch.hashes(texts), salts, strict=True):
            source = self._source_grams(doc.verdict)
            sketch.learn(scope.salted(grams, salt), None if source is None
                         else scope.salted(source, salt))

    def _source_grams(self, verdict: Verdict) -> np.ndarray | None:
        """The trigrams of the stored text a near verdict matched (None for other verdicts, or
        when it expired)."""
        if verdict.decision is not Decision.NEAR or verdict.matched_id is None:
            return None
        seq = self.store.get_many("ids", [verdict.matched_id.encode()])[0]
        data = self.store.get_many("docs", [seq])[0] if seq is not None else None
        if data is None or self.commonness is None:
            return None
        return self.commonness.hashes([Doc.peek(data)[2]])[0]

    def checkpoint(self) -> None:
        """Snapshot the Bloom filter (and the boilerplate sketch) so a restart does not re-read
        the records."""
        writes = WriteSet()
        self.exact.snapshot(self._next_seq - 1, writes)
        if self.commonness is not None:
            writes.put("meta", _META_COMMON,
                       struct.pack(">Q", self._next_seq - 1) + self.commonness.snapshot())
        self.store.write(writes)
