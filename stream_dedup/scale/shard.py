"""One partition of the probes topic: a shard of the global index, in its own `KVStore`.

A probe is answered with the entries under its shard key that come EARLIER in the total order
(event time, then message id: `probes.order_key`), then its own entry is inserted. Entry keys are
shard key + order key, so "earlier" is a range scan that stops at the probe's own key.

Replay: every entry (and a marker for a lookup-only anchor) remembers the shard's arrival
sequence number when it was inserted. A probe whose own key is already there was answered before
(the fingerprint stage replayed it after a crash); it is answered again from the entries that
arrived before it did, which is the first answer unless expiry removed some meanwhile.

Column families of `engine.stored.TABLES`, as used here: `exact`, `blocks`, `anchors` hold the
entries of the three kinds of shard key (value: arrival, fingerprint, normalized text); `ids`
the lookup-only markers; `meta` the arrival counter and the newest event time seen.

Expiry (`sweep.Sweeper`): entries older than `window.seconds` behind the newest event time this
shard has seen are deleted by a periodic sweep before a batch.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from ..config import Settings
from ..state.store import KVStore, WriteSet
from .probes import ANCHOR, BLOCK, EXACT, LOOKUP, SHARD_KEY_BYTES, Answer, Hit, Probe, order_key
from .sweep import Sweeper

_FAMILY = {EXACT: "exact", BLOCK: "blocks", ANCHOR: "anchors", LOOKUP: "ids"}
_COUNTERS = b"shard"
_ENTRY = struct.Struct("<QQ")  # arrival, fingerprint (then the normalized text)


def _event_ms(key: bytes, _value: bytes) -> int:
    return struct.unpack_from(">Q", key, SHARD_KEY_BYTES)[0]


class Shard:
    """Answers and inserts the probes of one probes partition."""

    def __init__(self, store: KVStore, settings: Settings) -> None:
        self.store = store
        self._settings = settings
        counters = store.get_many("meta", [_COUNTERS])[0]
        self._arrival, self._max_ts = struct.unpack("<Qq", counters) if counters else (0, 0)
        self.sweeper = Sweeper(int(settings.window.seconds * 1000), tuple(_FAMILY.values()),
                               _event_ms)

    def answer(self, probes: Sequence[Probe]) -> list[Answer]:
        """Answer a batch (in total order, so earlier probes of the batch are seen by later
        ones) and write its entries in one write."""
        if not probes:
            return []
        writes = WriteSet()
        self.sweeper.maybe_sweep(self.store, max(self._max_ts, max(p.ts_ms for p in probes)),
                                 writes)
        if writes.ops:
            self.store.write(writes)
            writes = WriteSet()
        fresh: dict[tuple[str, bytes], list[tuple[bytes, int, bytes]]] = {}  # this batch's
        answers = []
        for p in sorted(probes, key=lambda p: (p.ts_ms, p.message_id.encode())):
            cf = _FAMILY[p.kind]
            shard = p.shard_key
            own = shard + order_key(p.ts_ms, p.message_id)
            arrival = self._arrived(cf, own, fresh.get((cf, shard), ()))
            if arrival is None:
                self._arrival += 1
                arrival = self._arrival
                value = _ENTRY.pack(arrival, p.fp) + p.text.encode()
                writes.put(cf, own, value)
                fresh.setdefault((cf, shard), []).append((own, arrival, value))
            self._max_ts = max(self._max_ts, p.ts_ms)
            found_in = "anchors" if p.kind == LOOKUP else cf  # a lookup meets the posted ones
            answers.append(self._answer(p, found_in, shard, own, arrival,
                                        fresh.get((found_in, shard), ())))
            if p.kind != LOOKUP:
                answers += self._late(p, cf, shard, own, arrival)
        writes.put("meta", _COUNTERS, struct.pack("<Qq", self._arrival, self._max_ts))
        self.store.write(writes)
        return answers

    def _arrived(self, cf: str, own: bytes,
                 fresh: Sequence[tuple[bytes, int, bytes]]) -> int | None:
        """The arrival of this probe's own entry when it was seen before, else None."""
        for key, arrival, _ in fresh:
            if key == own:
                return arrival
        value = self.store.get_many(cf, [own])[0]
        return None if value is None else _ENTRY.unpack_from(value)[0]

    def _late(self, p: Probe, cf: str, shard: bytes, own: bytes,
              arrival: int) -> list[Answer]:
        """Late answers: the entries under `shard` that come after this probe in order but
        arrived before it were answered without it; tell the closest of them (as many as an
        anchor remembers) that it is an earlier candidate. The decide stage uses that while
        those messages wait for other answers; after, the pair is missed (both are kept)."""
        later = [(k, v) for k, v in self.store.scan(cf, own + b"\x00", shard + b"\xff")
                 if _ENTRY.unpack_from(v)[0] < arrival]
        if p.kind == ANCHOR:  # lookups of later messages meet this posted anchor
            later += [(k, v) for k, v in self.store.scan("ids", own + b"\x00", shard + b"\xff")
                      if _ENTRY.unpack_from(v)[0] < arrival]
            later.sort()
        limit = self._settings.index.candidate_distance
        out = []
        for key, value in later[: self._settings.index.anchor_postings]:
            _, fp = _ENTRY.unpack_from(value)
            distance = (fp ^ p.fp).bit_count() if p.kind == BLOCK else -1
            if distance > limit:
                continue
            hit = Hit(p.message_id, p.ts_ms, p.fp, distance, p.text)
            out.append(Answer(key[SHARD_KEY_BYTES + 8:].decode(), p.index, p.kind, (hit,),
                              late=True, table=p.table))
        return out

    def _answer(self, p: Probe, cf: str, shard: bytes, own: bytes, arrival: int,
                fresh: Sequence[tuple[bytes, int, bytes]]) -> Answer:
        """The entries under `shard` earlier in order than `own` that arrived before it."""
        earlier = [(k, v) for k, v in self.store.scan(cf, shard, own)
                   if _ENTRY.unpack_from(v)[0] < arrival]
        earlier += [(k, v) for k, a, v in fresh if k < own and a < arrival]
        earlier.sort()
        if p.kind == EXACT:
            earlier = earlier[:1]  # the first message with this text
        elif p.kind in (ANCHOR, LOOKUP):
            earlier = earlier[-self._settings.index.anchor_postings:]  # the closest earlier
        hits = []
        limit = self._settings.index.candidate_distance
        for key, value in earlier:
            _, fp = _ENTRY.unpack_from(value)
            ts = struct.unpack_from(">Q", key, SHARD_KEY_BYTES)[0]
            ident = key[SHARD_KEY_BYTES + 8:].decode()
            if p.kind == BLOCK:
                distance = (fp ^ p.fp).bit_count()
                if distance > limit:
                    continue
            else:
                distance = -1
            hits.append(Hit(ident, ts, fp, distance, value[_ENTRY.size:].decode()))
        return Answer(p.message_id, p.index, p.kind, tuple(hits), table=p.table)
