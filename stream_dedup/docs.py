"""The stored record of every message (`docs` column family, keyed by arrival seq).

It holds what later messages need to verify against this one (fingerprint, normalized text), what
expiry needs to undo its index entries (event time, text hash), and its first verdict, returned
again when the same id is replayed.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from .records import Decision, Verdict

_HEAD = struct.Struct("<qQQBbfHHH")
_DECISIONS = tuple(Decision)
_DECISION_CODE = {d: i for i, d in enumerate(_DECISIONS)}


def seq_key(seq: int) -> bytes:
    return struct.pack(">Q", seq)


def ttl_key(ts_ms: int, seq: int) -> bytes:
    return struct.pack(">QQ", max(ts_ms, 0), seq)


@dataclass(frozen=True, slots=True)
class Doc:
    """One stored message. `indexed` says whether its fingerprint and anchors are in the tables
    (exact duplicates are not: their text is already there)."""

    seq: int
    ts_ms: int
    fp: int
    text_hash: int
    verdict: Verdict
    text: str
    indexed: bool

    def encode(self) -> bytes:
        v = self.verdict
        ident = v.id.encode()
        matched = v.matched_id.encode() if v.matched_id else b""
        guard = v.guard.encode() if v.guard else b""
        head = _HEAD.pack(
            self.ts_ms, self.fp, self.text_hash,
            _DECISION_CODE[v.decision] | (0x80 if self.indexed else 0),
            -1 if v.distance is None else v.distance,
            math.nan if v.similarity is None else v.similarity,
            len(ident), len(matched), len(guard),
        )
        return head + ident + matched + guard + v.reason.encode() + b"\x00" + self.text.encode()

    @staticmethod
    def peek(data: bytes) -> tuple[str, int, str]:
        """(id, fingerprint, normalized text): what verification needs, without the verdict."""
        _ts, fp, _th, _flags, _dist, _sim, n_id, n_m, n_g = _HEAD.unpack_from(data)
        pos = _HEAD.size
        text = data[pos + n_id + n_m + n_g :].partition(b"\x00")[2]
        return data[pos : pos + n_id].decode(), fp, text.decode()

    @classmethod
    def decode(cls, seq: int, data: bytes) -> Doc:
        ts, fp, th, flags, dist, sim, n_id, n_m, n_g = _HEAD.unpack_from(data)
        pos = _HEAD.size
        ident = data[pos : pos + n_id].decode()
        pos += n_id
        matched = data[pos : pos + n_m].decode() or None
        pos += n_m
        guard = data[pos : pos + n_g].decode() or None
        reason, _, text = data[pos + n_g :].partition(b"\x00")
        verdict = Verdict(
            id=ident,
            decision=_DECISIONS[flags & 0x7F],
            reason=reason.decode(),
            matched_id=matched,
            distance=None if dist < 0 else dist,
            similarity=None if math.isnan(sim) else round(sim, 4),
            guard=guard,
        )
        return cls(seq, ts, fp, th, verdict, text.decode(), bool(flags & 0x80))
