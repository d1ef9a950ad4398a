"""One partition of the decide stage: join a message's original and its answers, then decide it
with the engine's verification (`verdict.closest_verdict`). Pure of Kafka; state in a `KVStore`.

A message is decided once its original and one answer per probe (`Original.probes`, counted by
probe index, so a replayed answer counts once) are in. Its verdict is remembered by id together
with its original: an original seen again (the fingerprint stage replayed it), or a probe's own
answer seen again (this stage or an index shard replayed a batch), gets the first verdict routed
again, marked replayed. The original must stay: the decide loop has the changelog acknowledged
before it delivers, so a process killed in between leaves verdicts durable but not delivered, and
the replayed batch may hold only the answers that completed them. Late answers of a decided
message are dropped (they are not replays).

Only earlier messages ever answer (the index shards answer with entries earlier in the total
order), so a message is dropped only as a duplicate of an earlier one: two near duplicates can
never drop each other, and following `matched_id` from any dropped message ends at a kept one.

Column families of `engine.stored.TABLES`, as used here: `docs` what an open message has so
far by id (its original when it came, and its answers: one value, so a batch costs one write
per message it touches, and a changelog record per write); `ids` verdicts by id (a `stored.Doc`
holding the verdict and the event time, then the packed original: `_decided`); `meta` the
newest event time seen. Verdicts older
than the window behind it are forgotten by a periodic sweep (`sweep.Sweeper`): a replay that
late is decided afresh.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..config import Settings
from ..engine.commonness import Commonness
from ..engine.features import FAMILIES
from ..engine.mood import ASKS
from ..engine.stored import Doc
from ..engine.verdict import (
    Candidate,
    anchor_need,
    anchor_weights,
    closest_verdict,
    empty_verdict,
    rank_key,
    repeat_verdict,
    source_seq,
)
from ..engine.verify import similarities, warm_up
from ..records import Verdict
from ..state.store import KVStore, WriteSet
from .probes import (
    BLOCK,
    EXACT,
    Answer,
    Original,
    encode_answers,
    order_key,
    pack_original,
    unpack_answers,
    unpack_original,
)
from .sweep import Sweeper

_NEWEST = b"join"


Slot = tuple[int, int, str]  # (probe index, or late: kind, index and id of the earlier message)


def _slot(a: Answer) -> Slot:
    """Where an answer counts: its probe's own answer once, and each late answer (one hit)
    once however often it is replayed."""
    return (a.kind, a.index, a.hits[0].message_id) if a.late else (-1, a.index, "")


def _pending(original: Original | None, answers: dict[Slot, Answer]) -> bytes:
    packed = pack_original(original) if original is not None else b""
    return struct.pack("<I", len(packed)) + packed + encode_answers(list(answers.values()))


def _unpending(data: bytes | None) -> tuple[Original | None, dict[Slot, Answer]]:
    if data is None:
        return None, {}
    (size,) = struct.unpack_from("<I", data)
    original = unpack_original(data[4:4 + size]) if size else None
    return original, {_slot(a): a for a in unpack_answers(data[4 + size:])}


def _decided(verdict: Doc, original: Original) -> bytes:
    doc = verdict.encode()
    return struct.pack("<I", len(doc)) + doc + pack_original(original)


def _undecided(data: bytes) -> tuple[Doc, Original]:
    (size,) = struct.unpack_from("<I", data)
    return Doc.decode(0, data[4:4 + size]), unpack_original(data[4 + size:])


def _event_ms(_key: bytes, value: bytes) -> int:
    return _undecided(value)[0].ts_ms


@dataclass(frozen=True, slots=True)
class Decided:
    """An original and its verdict (`replayed` when it was decided before)."""

    original: Original
    verdict: Verdict


class Join:
    """Collects originals and answers of one join partition and decides complete messages."""

    def __init__(self, store: KVStore, settings: Settings) -> None:
        self.store = store
        self._settings = settings
        self.sweeper = Sweeper(int(settings.window.seconds * 1000), ("ids",), _event_ms)
        newest = store.get_many("meta", [_NEWEST])[0]
        self._max_ts = struct.unpack("<q", newest)[0] if newest else 0
        self._weights = anchor_weights(settings.index.anchor_postings)
        vs = settings.verify
        # The stream's boilerplate (`commonness`), learnt from the messages this partition
        # decides, in the order it decides them; relearnt after a restart.
        self.commonness = (Commonness(vs.boilerplate_messages, vs.boilerplate_generation)
                           if "added" in vs.meaning_classes else None)
        warm_up()

    def add(self, originals: Sequence[Original], answers: Sequence[Answer]) -> list[Decided]:
        """Take a batch in; return the messages it completed, and the replayed originals."""
        ids = sorted({o.message_id for o in originals} | {a.message_id for a in answers})
        verdicts = dict(zip(ids, self.store.get_many("ids", [i.encode() for i in ids]),
                            strict=True))
        first = {i: _undecided(v) for i, v in verdicts.items() if v is not None}
        out: list[Decided] = []
        again: set[str] = set()  # decided before: routed again once per batch

        def replayed(ident: str, original: Original) -> None:
            if ident not in again:
                again.add(ident)
                out.append(Decided(original, replace(first[ident][0].verdict, replayed=True)))

        fresh: dict[str, Original] = {}
        for o in originals:
            if o.message_id in first:
                replayed(o.message_id, o)
            else:
                fresh[o.message_id] = o
        arrived: dict[str, dict[Slot, Answer]] = {}
        for a in answers:
            if a.message_id not in first:
                arrived.setdefault(a.message_id, {})[_slot(a)] = a
            elif not a.late:
                replayed(a.message_id, first[a.message_id][1])
        open_ids = [i for i in ids if i not in first]
        writes = WriteSet()
        complete = []
        for ident, data in zip(open_ids, self.store.get_many("docs", [i.encode()
                                                                      for i in open_ids]),
                               strict=True):
            original, got = _unpending(data)
            original = fresh.get(ident, original)
            got.update(arrived.get(ident, {}))
            if original is None or sum(not a.late for a in got.values()) < original.probes:
                writes.put("docs", ident.encode(), _pending(original, got))
                continue
            complete.append((order_key(original.ts_ms, ident), original, got, data is not None))
        # Decided in the total order, as the engine decides them: the stream's boilerplate is
        # learnt message by message.
        for _, original, got, was_open in sorted(complete, key=lambda item: item[0]):
            verdict = self.verdict(original, list(got.values()))
            out.append(Decided(original, verdict))
            self._record(original, verdict, was_open, writes)
        self.sweeper.maybe_sweep(self.store, self._max_ts, writes)
        writes.put("meta", _NEWEST, struct.pack("<q", self._max_ts))
        self.store.write(writes)
        return out

    def verdict(self, o: Original, answers: Sequence[Answer]) -> Verdict:
        """The engine's decision from the shards' answers: the first message with the same text
        decides a repeat (an exact hit's text is that message's ending); else the ranked
        candidates are verified."""
        same = [h for a in answers if a.kind == EXACT for h in a.hits]
        if same:
            first = min(same, key=lambda h: (h.ts_ms, h.message_id.encode()))
            return repeat_verdict(o.message_id, first.message_id, o.text, (first.text, o.ending),
                                  self._settings.verify)
        if not o.text:
            return empty_verdict(o.message_id)
        # id -> [distance (-1: none), anchor score, hit, shared anchors per family]
        found: dict[str, list] = {}
        for a in answers:
            # the posters the engine would have seen: one a text (it never posts exact copies)
            seen = len({h.text for h in a.hits})
            weight = int(self._weights[min(seen, len(self._weights) - 1)])
            for h in a.hits:
                entry = found.setdefault(h.message_id, [-1, 0, h, [0] * FAMILIES])
                if a.kind == BLOCK:
                    if entry[0] < 0 or h.distance < entry[0]:
                        entry[0] = h.distance
                elif a.kind != EXACT:
                    entry[1] += weight
                    entry[3][a.table] += 1
        # The engine indexes only the first message of a text (its exact copies are decided by
        # the exact stage and never posted); the shards index every message. Of candidates with
        # one text, the first stands for them, with what they found together.
        first: dict[str, list] = {}
        for entry in sorted(found.values(), key=lambda e: (e[2].ts_ms, e[2].message_id.encode())):
            kept = first.setdefault(entry[2].text, entry)
            if kept is not entry:
                if entry[0] >= 0 and (kept[0] < 0 or entry[0] < kept[0]):
                    kept[0] = entry[0]
                kept[1] = max(kept[1], entry[1])
                kept[3] = [max(x, y) for x, y in zip(kept[3], entry[3], strict=True)]
        found = {e[2].message_id: e for e in first.values()}
        need = anchor_need(o.anchors, self._settings.index.anchors_stored)[0].tolist()
        ranked = sorted(((rank_key((0, d, score)), (h.ts_ms, h.message_id.encode()), d, h)
                         for d, score, h, shared in found.values()
                         if d >= 0 or any(x >= y for x, y in zip(shared, need, strict=True))),
                        key=lambda item: item[:2])
        hits = [(d, h) for _, _, d, h in ranked[:self._settings.index.max_candidates]]
        texts = [o.text, *(h.text for _, h in hits)]  # each candidate measured against texts[0]
        measured = similarities(texts, range(1, len(texts)), [0] * len(hits),
                                self._settings.verify)
        candidates = [Candidate(h.message_id, h.text, h.fp, d, m)
                      for (d, h), m in zip(hits, measured, strict=True)]
        sketch = self.commonness
        grams = sketch.hashes(texts) if sketch is not None else []
        common = sketch.mask(grams[0], len(o.text)) if sketch is not None and hits else None
        verdict = closest_verdict(o.message_id, o.text, o.fp, candidates, self._settings.verify,
                                  common, o.clauses, o.ending == ASKS)
        if sketch is not None:  # in the order this partition decides its messages
            source = source_seq(verdict, candidates, range(1, len(texts)))
            sketch.learn(grams[0], None if source is None else grams[source])
        return verdict

    def _record(self, o: Original, verdict: Verdict, was_open: bool, writes: WriteSet) -> None:
        ident = o.message_id.encode()
        writes.put("ids", ident, _decided(Doc(0, o.ts_ms, o.fp, 0, verdict, "", False), o))
        if was_open:
            writes.delete("docs", ident)
        self._max_ts = max(self._max_ts, o.ts_ms)
