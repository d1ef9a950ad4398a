"""The stored record of every message (`docs` column family, keyed by arrival seq).

It holds what later messages need to verify against this one (fingerprint, normalized text), what
expiry needs to undo its index entries (event time, text hash), and its first verdict, returned
again when the same id is replayed.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from ..records import Decision, Verdict

# The engine's tables (the state's column families). meta: format version, sequence counter,
# snapshots; exact: text hash -> seq; blocks: (table, bucket key) -> packed entries; anchors:
# anchor -> packed seqs; docs: seq -> stored message; ids: message id -> seq; ttl: (event time,
# seq) -> "".
TABLES = ("meta", "exact", "blocks", "anchors", "docs", "ids", "ttl")
_HEAD = struct.Struct("<qQQBbfHHH")
_DECISIONS = tuple(Decision)
_DECISION_CODE = {d: i for i, d in enumerate(_DECISIONS)}
_SEQ_KEY = struct.Struct(">Q")
_TTL_KEY = struct.Struct(">QQ")


def seq_key(seq: int) -> bytes:
    return _SEQ_KEY.pack(seq)


def ttl_key(ts_ms: int, seq: int) -> bytes:
    return _TTL_KEY.pack(ts_ms if ts_ms > 0 else 0, seq)


def encode_doc(ts_ms: int, fp: int, text_hash: int, verdict: Verdict, text: str,
               indexed: bool) -> bytes:
    """`Doc.encode` without building the Doc: the engine writes one for every message."""
    ident = verdict.id.encode()
    matched = verdict.matched_id.encode() if verdict.matched_id else b""
    guard = verdict.guard.encode() if verdict.guard else b""
    head = _HEAD.pack(
        ts_ms, fp, text_hash,
        _DECISION_CODE[verdict.decision] | (0x80 if indexed else 0),
        -1 if verdict.distance is None else verdict.distance,
        math.nan if verdict.similarity is None else verdict.similarity,
        len(ident), len(matched), len(guard),
    )
    return head + ident + matched + guard + verdict.reason.encode() + b"\x00" + text.encode()


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
        return encode_doc(self.ts_ms, self.fp, self.text_hash, self.verdict, self.text,
                          self.indexed)

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
