"""The engine: normalize -> exact -> fingerprint -> index -> verify -> verdict, a batch at a time.

Pure of I/O at the edges: no Kafka, no files, no metrics library. State reaches it as a `KVStore`.
A batch is decided exactly as if its messages came one at a time in order, and every batch's state
changes are written in one atomic write, so after `process` returns the verdicts are durable and
a crash never leaves half a batch behind.

Per message, in order:
1. Replay: an id already stored gets its first verdict again (the Kafka service replays after a
   crash; a message must never be called a duplicate of its own earlier pass).
2. Exact: the hash of the normalized text through the Bloom filter, confirmed in `exact`.
3. Near: Simhash block tables and winnowing anchors propose candidates, best first; `verify`
   decides with the second measure and the guards. The first candidate that passes wins.
4. Record: the message's doc, id and TTL entry; its fingerprint and anchors unless it was an
   exact duplicate (its text is in the tables already).
Expiry runs before each batch: messages older than the window (event time, behind the newest
seen) leave every table, oldest first, so the state stays bounded under an endless stream.
Python's cyclic garbage collector is paused while a batch is decided (`collector.paused`: 5-7% of
the engine's time when it ran every ~70 messages of a batch).
"""

from __future__ import annotations

import gc
import struct
import time
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from itertools import repeat

import numpy as np

from .. import collector
from ..config import Settings
from ..records import Message, Verdict
from ..state import open_store
from ..state.store import KVStore, WriteSet
from . import bloom, jit, meaning, mood, scope, verify
from . import fingerprint as fpr
from .commonness import InOrder
from .exact import ExactStage, content_hash, exact_key, exact_value
from .expiry import expire
from .features import features
from .index import pairs
from .index.layout import configured_layout, index_capacity
from .index.probe import AnchorQuery, BatchProbe
from .normalize import Clauses, Normalized, Normalizer
from .snapshots import Snapshots
from .stored import TABLES, Doc, encode_doc, seq_key, ttl_key
from .strategies import make_strategy
from .verdict import (
    Candidate,
    anchor_need,
    anchor_weights,
    closest_verdict,
    empty_verdict,
    per_message,
    repeat_verdict,
    source_seq,
    unique,
)

META_COUNTERS = b"counters"
STAGES = ("normalize", "exact", "fingerprint", "index", "verify", "write")
# Tables the engine (and its expiry) reads by key only, never by range, whose keys differ in
# their first 9 bytes (hashes, bucket keys): its store may keep them in hash memtables
# (`state.open_store`). A bucket key's first 8 bytes hardly vary (a table number and a 16-bit
# block in 8 bytes): it is hashed whole.
LOOKUPS_ONLY = ("anchors", "blocks", "exact")
# The filter of what the index holds (`Engine._written_filter`): sized for this many anchors a
# message is posted under (a few of each family) and its buckets (one a table) at the index's
# capacity, at most `MOST_WRITTEN` keys (20 MB of bits), letting about one lookup in a hundred
# of what the index does not hold through.
ANCHORS_WRITTEN = 8
MOST_WRITTEN = 1 << 24
WRITTEN_FP_RATE = 0.01


def engine_store(settings: Settings, path: str, sync: bool) -> KVStore:
    """The configured store (`state.*`) at `path` for an engine: its block tables' options
    chosen from what they hold at the index's capacity (`state.rocksdb.RocksStore`)."""
    st = settings.state
    capacity = index_capacity(settings)
    layout = configured_layout(settings)
    return open_store(st.backend, path, TABLES, st.block_cache_mb, sync, LOOKUPS_ONLY,
                      st.index_block_kb, index_bytes=layout.stored_bytes(capacity),
                      index_hits=layout.found(capacity) > 0.5)


def open_engine(settings: Settings, path: str, warm: bool = True) -> Engine:
    """An engine on the configured state (`state.*`) at `path`; the store is closed again when
    the engine cannot start on it. `warm`: load what the verification needs now (`warm_up`)."""
    store = engine_store(settings, path, settings.state.sync_writes)
    try:
        engine = Engine(settings, store)
        if warm:
            engine.warm_up()
        return engine
    except BaseException:
        store.close()
        raise


@dataclass(slots=True)
class EngineStats:
    """Running totals; `stage_seconds` is wall time spent in each stage."""

    messages: int = 0
    decisions: Counter[str] = field(default_factory=Counter)
    replayed: int = 0
    expired: int = 0
    candidates: int = 0
    stage_seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))


@dataclass(slots=True)
class _Pending:
    """A message of the current batch on its way through the stages."""

    msg: Message
    text: str = ""
    clauses: Clauses = ()  # where the normalized text's clauses end
    hash: int = 0
    seq: int = 0
    verdict: Verdict | None = None
    fp: int = 0
    indexed: bool = False
    ending: str = mood.NONE  # how its raw text ends, as the rules read it (`mood.kept_ending`)
    repeat: bool = False  # an earlier message has its normalized text


class Engine(Snapshots):
    """Decides each message of a stream: unique, exact duplicate or near duplicate."""

    def __init__(self, settings: Settings, store: KVStore) -> None:
        self.settings = settings
        self.store = store
        self.stats = EngineStats()
        self._normalizer = Normalizer(settings.normalize)
        self._strategy = make_strategy(settings.fingerprint)
        self._layout = configured_layout(settings)
        self._window_ms = int(settings.window.seconds * 1000)
        self._weights = anchor_weights(settings.index.anchor_postings)
        # Called with each message id and the ids of its candidates, best first (a bench reads
        # the index's recall through it); None: not called.
        self.on_candidates: Callable[[str, list[str]], None] | None = None
        self._recent: dict[int, tuple[str, str, int, int]] = {}
        self.exact = ExactStage(settings.exact, settings.window.seconds, store)
        self._check_format()
        self._check_layout(self._layout, index_capacity(settings))
        counters = store.get_many("meta", [META_COUNTERS])[0]
        self._next_seq, self._max_ts = struct.unpack(">Qq", counters) if counters else (1, 0)
        covered = self.exact.restore()
        self.commonness, counted = self._restore_commonness(covered)
        self._rebuild(covered, counted)
        self._written = self._written_filter()
        # A state opened empty: its first batches have no stored messages to expire, so a small
        # one may run the kernels as plain Python (`process`, `jit.plain_for`).
        self._opened_empty = self._written is not None
        # What the engine loaded lives as long as it does: out of the collector's sight, so a
        # full collection does not walk it.
        gc.freeze()

    def _written_filter(self) -> bloom.Bloom | None:
        """A filter of the anchors and buckets this engine writes (`BatchProbe`), when the
        state's index is empty (a new state: a file run's, a first start): everything the index
        will hold is then in the filter, which spares the lookups of the rest. Sized for the
        index's capacity; once past it, every lookup is made again. A state with a doc is not
        new (the docs are looked at first: a scan of a hashed table sorts its memtable)."""
        for table in ("docs", "anchors", "blocks"):
            if next(iter(self.store.scan(table, b"", b"\xff" * 16)), None) is not None:
                return None
        per_message = ANCHORS_WRITTEN + len(self._layout.tables)
        return bloom.Bloom(min(per_message * index_capacity(self.settings), MOST_WRITTEN),
                           WRITTEN_FP_RATE)

    def warm_up(self) -> None:
        """Load what deciding a candidate pair needs (the compiled verification kernels, the
        meaning check's language resources: about a second, and ~200 MB) now rather than in
        the first batch that has a candidate: a service's first messages wait for no loading.
        The other kernels are loaded here too. Without it they load when a batch first needs
        them, so a run that never compares two texts never pays for them, and a new state's first
        messages, too few to pay for the compiler, run the kernels as plain Python (`jit`)."""
        jit.load()
        fpr.warm_up()
        pairs.warm_up()
        bloom.warm_up()
        if self.settings.verify.meaning_classes:
            meaning.warm_up()
        verify.warm_up()

    def close(self, keep: bool = True) -> None:
        """Checkpoint and close the state; `keep=False` for a state removed right after (a
        file-mode run's temporary one): no snapshot or flush is written that no one would
        read."""
        if keep:
            self.checkpoint()
        self.store.close(keep)

    def normalize(self, texts: Sequence[str]) -> Normalized:
        """The texts as the engine compares them, with where their clauses end (what `process`
        takes as `normalized`)."""
        return self._normalizer.with_clauses(texts)

    def stored_messages(self) -> int:
        """Messages in the state: one TTL key each (the engine writes one per stored message)."""
        return sum(1 for _ in self.store.scan("ttl", b"", b"\xff" * 17))

    # -- the batch ------------------------------------------------------------------------

    def process(self, messages: Sequence[Message],
                normalized: Normalized | None = None) -> list[Verdict]:
        """Decide a batch, in order, and make the decisions durable before returning them.
        `normalized`: the messages' texts as `Normalizer(settings.normalize)` makes them
        (`with_clauses`), when
        the caller made them already (the engine process's parent does, on its own core)."""
        if not messages:
            return []
        plain = self._opened_empty and jit.plain_for(len(messages))
        with collector.paused(), jit.plain() if plain else nullcontext():
            return self._process(messages, normalized)

    def _process(self, messages: Sequence[Message],
                 normalized: Normalized | None) -> list[Verdict]:
        clock = time.perf_counter
        seconds = self.stats.stage_seconds
        t0 = clock()
        newest = max(self._max_ts, max(m.timestamp_ms for m in messages))
        self.stats.expired += expire(self.store, self.settings, self._strategy, self._layout,
                                     newest - self._window_ms)
        if normalized is None:
            pending = [_Pending(m) for m in messages]
        else:
            pending = [_Pending(m, t, c) for m, t, c in zip(messages, *normalized, strict=True)]
        fresh, repeats = self._replay(pending)
        t1 = clock()
        seconds["write"] += t1 - t0
        if normalized is None:
            for p, text, clauses in zip(fresh, *self.normalize([p.msg.text for p in fresh]),
                                        strict=True):
                p.text, p.clauses = text, clauses
        t2 = clock()
        seconds["normalize"] += t2 - t1
        near = self._exact_stage(fresh)
        t3 = clock()
        seconds["exact"] += t3 - t2
        tables = self._near_stage(near, seconds)
        t4 = clock()
        self._record(fresh, tables)
        for p, first in repeats:
            p.verdict = _replayed(first.verdict)
        self.stats.replayed += len(repeats)
        seconds["write"] += clock() - t4
        self.stats.messages += len(messages)
        verdicts = [p.verdict for p in pending]
        # str() of a Decision is its value (a StrEnum), cheaper than `.value`
        self.stats.decisions.update(str(v.decision) for v in verdicts)
        return verdicts  # type: ignore[return-value]

    def _replay(self, pending: list[_Pending]) -> tuple[list[_Pending],
                                                         list[tuple[_Pending, _Pending]]]:
        """Give stored ids their first verdict. Returns the messages seen for the first time, and
        each repeat of an id within the batch with its first occurrence, which decides it after
        the batch."""
        ids = [p.msg.id for p in pending]
        stored = self.store.get_many("ids", [i.encode() for i in ids])
        seqs = {i: v for i, v in zip(ids, stored, strict=True) if v is not None}
        docs = dict(zip(seqs, self.store.get_many("docs", list(seqs.values())), strict=True))
        fresh: list[_Pending] = []
        repeats: list[tuple[_Pending, _Pending]] = []
        first_in_batch: dict[str, _Pending] = {}
        seq = self._next_seq
        for p, ident in zip(pending, ids, strict=True):
            data = docs.get(ident)
            if data is not None:
                p.verdict = _replayed(Doc.decode(0, data).verdict)
                self.stats.replayed += 1
            elif ident in first_in_batch:
                repeats.append((p, first_in_batch[ident]))
            else:
                first_in_batch[ident] = p
                p.seq = seq
                seq += 1
                fresh.append(p)
        self._next_seq = seq
        return fresh, repeats

    def _exact_stage(self, fresh: list[_Pending]) -> list[_Pending]:
        """Decide exact duplicates; return the rest for the near stage."""
        for p in fresh:  # salted by scope: equal texts of two scopes never match
            p.hash = content_hash(p.text, p.msg.text) ^ scope.salt(p.msg.scope)
            p.ending = mood.kept_ending(p.text, p.msg.text)
        if not fresh:
            return []
        if not self.settings.exact.enabled:
            return [p for p in fresh if p.text]
        hashes = np.fromiter((p.hash for p in fresh), dtype=np.uint64, count=len(fresh))
        stamps = np.fromiter((p.msg.timestamp_ms for p in fresh), np.int64, count=len(fresh))
        maybe = self.exact.maybe_seen(hashes, stamps).tolist()
        hits = [p.hash for p, m in zip(fresh, maybe, strict=True) if m]
        self.exact.bloom_hits += len(hits)
        stored = iter(self.exact.confirm(hits))  # consumed in order, one per hit
        # hash -> id and ending of the batch's first message with that text
        earlier: dict[int, tuple[str, str]] = {}
        rest: list[_Pending] = []
        for p, hit in zip(fresh, maybe, strict=True):
            matched = next(stored) if hit else None
            if matched is None:
                matched = earlier.get(p.hash)
            if matched is not None:
                p.repeat = True
                p.verdict = repeat_verdict(p.msg.id, matched[0], p.text, (matched[1], p.ending),
                                           self.settings.verify)
                continue
            if hit:
                self.exact.false_positives += 1
            earlier[p.hash] = (p.msg.id, p.ending)
            if p.text:
                rest.append(p)
            else:
                p.verdict = empty_verdict(p.msg.id)
        return rest

    def _near_stage(self, near: list[_Pending], seconds: dict[str, float]) -> BatchProbe:
        """Fingerprint, find candidates, verify; returns the tables with the batch's inserts."""
        clock = time.perf_counter
        t0 = clock()
        s = self.settings
        salts = np.fromiter((scope.salt(p.msg.scope) for p in near), np.uint64, count=len(near))
        f = features([p.text for p in near], salts, self._strategy, s.fingerprint, s.index)
        fps, owner = f.fps, f.owner
        t1 = clock()
        seconds["fingerprint"] += t1 - t0
        if self._written is not None and self._written.full:
            self._written = None
        probe = BatchProbe(self.store, self._layout, s.index.anchor_postings,
                           s.index.anchors_stored, self._written)
        seqs = np.fromiter((p.seq for p in near), dtype=np.uint64, count=len(near))
        # A message's anchors go with its first row (every message has one or more rows).
        if len(owner) == len(near):
            first_row, families, posted = np.arange(len(near)), f.families, f.posted
        else:
            first_row = np.searchsorted(owner, np.arange(len(near)))
            families = np.zeros((len(owner), f.families.shape[1]), np.int64)
            posted = families.copy()
            families[first_row], posted[first_row] = f.families, f.posted
        query = AnchorQuery(f.values, families, anchor_need(families, s.index.anchors_stored),
                            self._weights, posted)
        found = probe.run(fps, seqs[owner], query, s.index.candidate_distance,
                          s.index.max_candidates)
        self.stats.candidates += found.considered
        in_batch: dict[int, _Pending] = {}
        for p, fp in zip(near, fps[first_row].tolist(), strict=True):
            p.fp = fp
            p.indexed = True
            in_batch[p.seq] = p
        t2 = clock()
        seconds["index"] += t2 - t1
        self._decide(near, per_message(found.by_message, owner, seqs, s.index.max_candidates),
                     in_batch, salts)
        seconds["verify"] += clock() - t2
        return probe

    def _decide(self, near: list[_Pending], candidates: list[list[tuple[int, int, int]]],
                in_batch: dict[int, _Pending], salts: np.ndarray) -> None:
        recent = self._recent
        live_from = self._max_ts - self._window_ms
        # seq -> (text, id, fingerprint, event time) of every candidate, and of the batch's
        # messages (an entry read from the disk has no event time: 0)
        entries: dict[int, tuple[str, str, int, int]] = {}
        wanted = []
        for seq in {seq for cands in candidates for seq, _, _ in cands if seq not in in_batch}:
            entry = recent.get(seq)
            if entry is not None and entry[3] >= live_from:
                entries[seq] = entry
            else:
                wanted.append(seq)
        for seq, data in zip(wanted, self.store.get_many("docs", [seq_key(q) for q in wanted]),
                             strict=True):
            if data is not None:  # else expired meanwhile
                ident, fp, text = Doc.peek(data)
                entries[seq] = (text, ident, fp, 0)
        if len(recent) > 200_000:  # what recent batches indexed, so candidates skip the disk
            recent.clear()
        mine = [(p.seq, (p.text, p.msg.id, p.fp, p.msg.timestamp_ms)) for p in near]
        recent.update(mine)
        entries.update(mine)
        found = [[(seq, dist) for seq, dist, _ in cands if seq in entries]  # else expired meanwhile
                 for cands in candidates]
        measured = iter(self._measure(near, found, entries))
        vs = self.settings.verify
        counts, text_of = self._in_order(near, found, entries, salts)
        for i, (p, cands) in enumerate(zip(near, found, strict=True)):
            if self.on_candidates is not None:
                self.on_candidates(p.msg.id, [entries[seq][1] for seq, _ in cands])
            if not cands:
                p.verdict = unique(p.msg.id, None, False)
                continue
            ranked = []
            for seq, dist in cands:
                text, ident, fp, _ = entries[seq]
                ranked.append(Candidate(ident, text, fp, dist, next(measured)))
            p.verdict = closest_verdict(p.msg.id, p.text, p.fp, ranked, vs,
                                        counts.mask(i) if counts is not None else None,
                                        p.clauses, p.ending == mood.ASKS)
            if counts is not None:  # a copy is counted for what it adds to its source
                source = source_seq(p.verdict, ranked, (seq for seq, _ in cands))
                if source is not None:
                    counts.source(i, text_of[source])
        if counts is not None:
            counts.finish()

    def _in_order(self, near: list[_Pending], found: list[list[tuple[int, int]]],
                  entries: dict[int, tuple[str, str, int, int]], salts: np.ndarray
                  ) -> tuple[InOrder | None, dict[int, int]]:
        """The batch's pass over the boilerplate sketch (None: the rule that reads it is off),
        and the index of each candidate's text in it. Every text is hashed at once: the
        messages, then their candidates; counted per scope: a key's boilerplate is its own."""
        if self.commonness is None:
            return None, {}
        text_of = {p.seq: i for i, p in enumerate(near)}
        for cands in found:
            for seq, _ in cands:
                text_of.setdefault(seq, len(text_of))
        texts = [p.text for p in near]
        texts += [entries[seq][0] for seq in list(text_of)[len(near):]]
        return self.commonness.in_order(texts, salts), text_of

    def _measure(self, near: list[_Pending], found: list[list[tuple[int, int]]],
                 entries: dict[int, tuple[str, str, int, int]]) -> list[verify.Measured]:
        """`verify.similarity` of every (candidate, message) pair of the batch, message by
        message, in one call: each text once, however many messages it is a candidate of."""
        where: dict[int, int] = {}  # seq -> index of its text
        first, second = [], []
        for p, cands in zip(near, found, strict=True):
            if cands:
                first += [where.setdefault(seq, len(where)) for seq, _ in cands]
                second += [where.setdefault(p.seq, len(where))] * len(cands)
        return verify.similarities([entries[seq][0] for seq in where], first, second,
                                   self.settings.verify)

    def _record(self, fresh: list[_Pending], tables: BatchProbe) -> None:
        """Write the batch's state in one atomic write. The ids go first: a changelog that
        mirrors the write op by op (scope `key`) can lose its tail in a crash, and a restored
        state must never hold a message's doc or index entries without its id (the replayed
        message would find its own doc and be called a copy of itself), and the doc last: a
        message whose doc is stored is replayed, never decided again, so everything else of it
        must be there too (its index entries, the TTL key that expires it, the exact record its
        repeats name). A restore applies whole writes only (`scale.changelog`); this order
        keeps a changelog written without write ends as safe as a prefix can be."""
        writes = WriteSet()
        ops = writes.ops  # appended directly, a table's ops in one run: ~10 ops a message
        keys = [seq_key(p.seq) for p in fresh]
        ops += zip(repeat("ids"), [p.msg.id.encode() for p in fresh], keys)
        tables.stage(writes)
        ops += [("ttl", ttl_key(p.msg.timestamp_ms, p.seq), b"") for p in fresh]
        # the first message of its text: its repeats name it
        ops += [("exact", exact_key(p.hash), exact_value(p.seq, p.msg.id, p.ending))
                for p in fresh if not p.repeat]
        ops += [("docs", key, encode_doc(p.msg.timestamp_ms, p.fp, p.hash, p.verdict,
                                         p.text if p.indexed else "", p.indexed))
                for p, key in zip(fresh, keys, strict=True)]
        if fresh:
            self._max_ts = max(self._max_ts, max(p.msg.timestamp_ms for p in fresh))
        writes.put("meta", META_COUNTERS, struct.pack(">Qq", self._next_seq, self._max_ts))
        self.store.write(writes)


def _replayed(first: Verdict) -> Verdict:
    return Verdict(first.id, first.decision, first.reason, first.matched_id, first.distance,
                   first.similarity, first.guard, replayed=True)
