"""Polled records and the engine's verdicts to output records: pure, no I/O.

`decode_batch` turns records into messages (or dead letters) and `route` decides, for each record
in poll order, which topic its output goes to and with what headers. The service does the I/O on
both sides of these two calls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from ..config import InputSettings, KafkaSettings
from ..decode import decode
from ..records import DeadLetter, Message, Verdict
from . import headers as h
from . import oversize
from .output import Output


class InputRecord(Protocol):
    """What the service reads of a consumed record (kafka-python's ConsumerRecord has these)."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def timestamp(self) -> int: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...
    @property
    def headers(self) -> Sequence[tuple[str, bytes]]: ...


def source_of(r: InputRecord) -> str:
    """``topic/partition/offset``: the id of a record without an id field, and its address."""
    return f"{r.topic}/{r.partition}/{r.offset}"


def decode_batch(records: Sequence[InputRecord], settings: InputSettings,
                 by_key: bool = False) -> list[Message | DeadLetter]:
    """Decode each record; the record timestamp is the arrival time (for messages with no
    event-time field). Each message knows its (topic, partition); with `by_key`
    (`scale.scope: key`) its record key is its scope (null and empty keys share one)."""
    out: list[Message | DeadLetter] = []
    for r in records:
        where = source_of(r)
        scope = (r.key or b"") if by_key else None
        out.append(decode(r.value or b"", where, where, r.timestamp, settings, scope,
                          (r.topic, r.partition)))
    return out


def route(records: Sequence[InputRecord], decoded: Sequence[Message | DeadLetter],
          verdicts: Sequence[Verdict], settings: KafkaSettings,
          limits: Mapping[str, int] | None = None) -> list[Output]:
    """One output per record (none for a duplicate when `duplicates_topic` is null), in poll
    order. `verdicts` are the engine's, in the order of the messages among `decoded`. With
    `limits` (the most bytes a record of each topic may take), an output its topic cannot take
    is cut into a dead letter (`oversize.fit`)."""
    outputs: list[Output] = []
    pending = iter(verdicts)
    quick = oversize.quick_bound(limits) if limits is not None else None
    for r, d in zip(records, decoded, strict=True):
        own = h.kept(r.headers)
        if isinstance(d, DeadLetter):
            extra = h.dead_letter_headers(d.reason, r.topic, r.partition, r.offset)
            o = Output("dead_letter", settings.dead_letter_topic, r.key, r.value, own + extra,
                       r.timestamp)
        else:
            v = next(pending)
            if not v.is_duplicate:
                o = Output("unique", settings.output_topic, r.key, r.value,
                           own + h.verdict_headers(v), r.timestamp)
            elif settings.duplicates_topic is not None:
                o = Output("duplicate", settings.duplicates_topic, r.key, r.value,
                           own + h.verdict_headers(v), r.timestamp)
            else:
                continue
        if quick is not None and r.value is not None and len(r.value) > quick:
            o = oversize.fit(o, limits, settings.dead_letter_topic,
                             (r.topic, r.partition, r.offset))
        outputs.append(o)
    if next(pending, None) is not None:
        raise ValueError("more verdicts than decoded messages")
    return outputs


def first_offsets(records: Sequence[InputRecord]) -> dict[tuple[str, int], int]:
    """The first offset of each (topic, partition) of `records`: where to poll them again."""
    out: dict[tuple[str, int], int] = {}
    for r in records:
        tp = (r.topic, r.partition)
        out[tp] = min(out.get(tp, r.offset), r.offset)
    return out


def next_offsets(records: Sequence[InputRecord]) -> dict[tuple[str, int], int]:
    """The offset to commit for each (topic, partition) of a batch: its last offset + 1."""
    out: dict[tuple[str, int], int] = {}
    for r in records:
        tp = (r.topic, r.partition)
        out[tp] = max(out.get(tp, 0), r.offset + 1)
    return out
