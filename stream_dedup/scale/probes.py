"""The wire format between the stages of `scope: global`: probes, answers and originals.

Many items travel in one Kafka record: the fingerprint stage packs every probe of an input batch
that goes to one probes partition into one record (and the index stage every answer that goes to
one answers partition), because kafka-python spends tens of microseconds per record and a message
makes about twenty probes. The partition is chosen here (`partition_of`, a stable xxh3 of the
shard key or of the message id), not by Kafka's partitioner, so a packed record still goes where
each of its items' keys belongs, and answers and originals of one id share a partition number.

A record is a block that writes each distinct text once and numbers it: a message's text
rides on several of its probes, and a popular message is a candidate of many probes.

A shard key is (kind, table, value): the exact hash of the normalized text, one block of one
Simhash table, or one anchor (`ANCHOR` posted and looked up, `LOOKUP` looked up only; its table
is its family, `features.FAMILIES`).
The total order every shard agrees on is (event timestamp, message id as UTF-8 bytes).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import xxhash

from ..engine.features import FAMILIES
from ..engine.mood import ASKS, NONE, STATES
from ..engine.normalize import Clauses

EXACT, BLOCK, ANCHOR, LOOKUP = 0, 1, 2, 3
T = TypeVar("T")
SHARD_KEY_BYTES = 11  # kind, table, value
MAX_RECORD_BYTES = 256 * 1024  # packed records are cut at this size (under the broker's 1 MiB)

_PROBE = struct.Struct("<BHQqQHHI")  # kind, table, value, ts, fp, index, len(id), text number
_ANSWER = struct.Struct("<HHBBH")  # len(id), probe index, kind (| _LATE), table, hits
_LATE = 0x80
_HIT = struct.Struct("<qQbHI")  # ts, fp, distance (-1: none), len(id), text number
_ORIGINAL = struct.Struct("<qQqiqHHHHHIIH")


def partition_of(key: bytes, partitions: int) -> int:
    """The partition of a shard key or a message id (stable across processes and runs)."""
    return xxhash.xxh3_64_intdigest(key) % partitions


def order_key(ts_ms: int, message_id: str) -> bytes:
    """The total order as bytes that sort like it: event time, then id."""
    return struct.pack(">Q", max(ts_ms, 0)) + message_id.encode()


@dataclass(frozen=True, slots=True)
class Probe:
    """One lookup-and-insert of a message at one shard key. `index` numbers the message's probes
    (0 .. probes-1), so the decide stage counts each answer once however often it is replayed.
    `fp` and `text` are what an entry stores for verification (for the exact hash, the message's
    `mood.ending`; empty for lookups)."""

    kind: int
    table: int
    value: int
    ts_ms: int
    message_id: str
    index: int
    fp: int = 0
    text: str = ""

    @property
    def shard_key(self) -> bytes:
        """Where the probe goes: a lookup-only anchor meets the entries posted under it."""
        return struct.pack(">BHQ", ANCHOR if self.kind == LOOKUP else self.kind, self.table,
                           self.value)


@dataclass(frozen=True, slots=True)
class Hit:
    """An earlier entry under the probe's key: candidate id, order, fingerprint, distance (block
    tables; -1 for anchors and the exact hash) and normalized text (for the exact hash, the
    message's `mood.ending`)."""

    message_id: str
    ts_ms: int
    fp: int
    distance: int
    text: str


@dataclass(frozen=True, slots=True)
class Answer:
    """A shard's answer to one probe of a message; or, `late`, a message that reached the
    shard after this one although it comes earlier (one hit; `index` is the index of that
    message's probe, so a replayed late answer is recognised)."""

    message_id: str
    index: int
    kind: int
    hits: tuple[Hit, ...]
    late: bool = False
    table: int = 0  # the probe's table: of an anchor, its family (`features.FAMILIES`)


@dataclass(frozen=True, slots=True)
class Original:
    """The input record of a message, with what the decide stage needs besides the answers."""

    message_id: str
    ts_ms: int
    text: str  # normalized ("" when nothing is left)
    fp: int
    probes: int  # answers to expect
    anchors: tuple[int, ...]  # anchors the message looked up, per family (`features.FAMILIES`)
    topic: str
    partition: int
    offset: int
    timestamp: int  # the input record's timestamp
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    clauses: Clauses = ()  # where the normalized text's clauses end
    ending: str = NONE  # how the message's raw text ends, as the rules read it (`mood.kept_ending`)


def _with_texts(texts: dict[str, int], body: list[bytes]) -> bytes:
    """A block: its distinct texts, numbered in order, then the items that name them."""
    table = [struct.pack("<I", len(texts))]
    for text in texts:
        data = text.encode()
        table += [struct.pack("<I", len(data)), data]
    return b"".join(table + body)


def _read_texts(data: bytes) -> tuple[list[str], int]:
    """The texts of a block and where its items start."""
    (count,) = struct.unpack_from("<I", data)
    pos = 4
    texts = []
    for _ in range(count):
        (size,) = struct.unpack_from("<I", data, pos)
        texts.append(data[pos + 4 : pos + 4 + size].decode())
        pos += 4 + size
    return texts, pos


def encode_probes(probes: Sequence[Probe]) -> bytes:
    """Probes as one block; a message's text once however many of its probes carry it."""
    texts: dict[str, int] = {}
    body = []
    for p in probes:
        ident = p.message_id.encode()
        number = texts.setdefault(p.text, len(texts))
        body += [_PROBE.pack(p.kind, p.table, p.value, p.ts_ms, p.fp, p.index, len(ident),
                             number), ident]
    return _with_texts(texts, body)


def unpack_probes(data: bytes) -> list[Probe]:
    """The probes of one `encode_probes` block."""
    texts, pos = _read_texts(data)
    out = []
    while pos < len(data):
        kind, table, value, ts, fp, index, n_id, number = _PROBE.unpack_from(data, pos)
        pos += _PROBE.size
        out.append(Probe(kind, table, value, ts, data[pos : pos + n_id].decode(), index, fp,
                         texts[number]))
        pos += n_id
    return out


def encode_answers(answers: Sequence[Answer]) -> bytes:
    """Answers as one block; each distinct candidate text once."""
    texts: dict[str, int] = {}
    body: list[bytes] = []
    for a in answers:
        ident = a.message_id.encode()
        body += [_ANSWER.pack(len(ident), a.index, a.kind | (_LATE if a.late else 0), a.table,
                              len(a.hits)), ident]
        for h in a.hits:
            hid = h.message_id.encode()
            number = texts.setdefault(h.text, len(texts))
            body += [_HIT.pack(h.ts_ms, h.fp, h.distance, len(hid), number), hid]
    return _with_texts(texts, body)


def unpack_answers(data: bytes) -> list[Answer]:
    """The answers of one `encode_answers` block."""
    texts, pos = _read_texts(data)
    out = []
    while pos < len(data):
        n_id, index, kind, table, hits = _ANSWER.unpack_from(data, pos)
        pos += _ANSWER.size
        ident = data[pos : pos + n_id].decode()
        pos += n_id
        found = []
        for _ in range(hits):
            ts, fp, dist, n_hid, number = _HIT.unpack_from(data, pos)
            pos += _HIT.size
            found.append(Hit(data[pos : pos + n_hid].decode(), ts, fp, dist, texts[number]))
            pos += n_hid
        out.append(Answer(ident, index, kind & ~_LATE, tuple(found), bool(kind & _LATE), table))
    return out


def _groups(items: Sequence[T], sizes: Sequence[int]) -> list[list[T]]:
    """Consecutive items in groups of at most `MAX_RECORD_BYTES` by `sizes` (one item alone
    when it is larger)."""
    out: list[list[T]] = []
    current: list[T] = []
    size = 0
    for item, n in zip(items, sizes, strict=True):
        if current and size + n > MAX_RECORD_BYTES:
            out.append(current)
            current, size = [], 0
        current.append(item)
        size += n
    if current:
        out.append(current)
    return out


def pack_probes(probes: Sequence[Probe]) -> list[bytes]:
    """Probes in records of at most `MAX_RECORD_BYTES` (sized as if no text repeated)."""
    sizes = [_PROBE.size + 4 + (len(p.message_id) + len(p.text)) * 3 for p in probes]
    return [encode_probes(group) for group in _groups(probes, sizes)]


def pack_answers(answers: Sequence[Answer]) -> list[bytes]:
    """Answers in records of at most `MAX_RECORD_BYTES` (sized as if no text repeated)."""
    sizes = [_ANSWER.size + len(a.message_id) * 3 + sum(
        _HIT.size + 4 + len(h.message_id) * 3 + len(h.text) * 3 for h in a.hits)
        for a in answers]
    return [encode_answers(group) for group in _groups(answers, sizes)]


def pack_original(o: Original) -> bytes:
    """One original per record (keyed by its id, so compaction-free topics keep them all). The
    clause ends come last, one uint32 each to the end: a record packed without them reads as a
    text without clause ends, and a reader that knows none ignores them."""
    fields = [o.message_id.encode(), o.text.encode(), o.topic.encode(),
              o.key or b"", o.value or b""]
    heads = [part for k, v in o.headers for part in (k.encode(), v)]
    head = _ORIGINAL.pack(o.ts_ms, o.fp, o.offset, o.partition, o.timestamp,
                          *(len(f) for f in fields[:4]),
                          (o.key is None) | (o.value is None) << 1
                          | (o.ending == ASKS) << 2 | (o.ending == STATES) << 3,
                          len(fields[4]), o.probes, len(o.headers))
    lengths = struct.pack(f"<{len(heads)}I", *(len(h) for h in heads)) + struct.pack(
        f"<{FAMILIES}I", *o.anchors)
    return (head + lengths + b"".join(fields) + b"".join(heads)
            + struct.pack(f"<{len(o.clauses)}I", *o.clauses))


def unpack_original(data: bytes) -> Original:
    (ts, fp, offset, partition, timestamp, n_id, n_text, n_topic, n_key, nulls, n_value, probes,
     n_headers) = _ORIGINAL.unpack_from(data)
    pos = _ORIGINAL.size
    lengths = struct.unpack_from(f"<{2 * n_headers}I", data, pos)
    pos += 4 * 2 * n_headers
    anchors = struct.unpack_from(f"<{FAMILIES}I", data, pos)
    pos += 4 * FAMILIES
    parts = []
    for n in (n_id, n_text, n_topic, n_key, n_value, *lengths):
        parts.append(data[pos : pos + n])
        pos += n
    ident, text, topic, key, value = parts[:5]
    heads = parts[5:]
    headers = tuple((heads[i].decode(), heads[i + 1]) for i in range(0, len(heads), 2))
    clauses = struct.unpack_from(f"<{(len(data) - pos) // 4}I", data, pos)
    return Original(ident.decode(), ts, text.decode(), fp, probes, anchors, topic.decode(),
                    partition, offset, timestamp, None if nulls & 1 else key,
                    None if nulls & 2 else value, headers, clauses,
                    ASKS if nulls & 4 else STATES if nulls & 8 else NONE)
