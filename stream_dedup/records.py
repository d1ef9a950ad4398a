"""The records that flow through the engine: messages in, verdicts and dead letters out."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


@dataclass(frozen=True, slots=True)
class Message:
    """One decoded feed message.

    `id` identifies the message for replay (the same id presented again gets its first verdict);
    `timestamp_ms` is event time in milliseconds since the epoch and drives the time window.
    `scope` (with `scale.scope: key`, the Kafka message key) confines matching: messages with
    different scopes never match; None is no scoping. `origin` is the (topic, partition) a Kafka
    message was read from (None for files): `scope: key` routes it to that partition's engine.
    """

    id: str
    text: str
    timestamp_ms: int
    scope: bytes | None = None
    origin: tuple[str, int] | None = None


class Decision(StrEnum):
    """What the engine decided about one message."""

    UNIQUE = "unique"
    EXACT = "exact"
    NEAR = "near"

    @property
    def is_duplicate(self) -> bool:
        return self is not Decision.UNIQUE


@dataclass(slots=True)  # not frozen: a frozen init costs 4x, and every message gets one
class Verdict:
    """A decision with its reason.

    `matched_id` names the earlier message the decision refers to: the duplicate's original, or
    for a unique message the *related* message, a near match whose text differs by a meaning
    change (then `guard` names the classes of change, comma-separated: number, date, entity,
    negation, antonym, swap).
    `distance` is the Simhash Hamming distance and `similarity` the verifying measure, when a
    candidate was compared. `replayed` is true when the id was seen before and the stored first
    verdict was returned.
    """

    id: str
    decision: Decision
    reason: str
    matched_id: str | None = None
    distance: int | None = None
    similarity: float | None = None
    guard: str | None = None
    replayed: bool = False

    @property
    def is_duplicate(self) -> bool:
        return self.decision.is_duplicate


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """An input record that could not become a message, and why. `source` says where it was
    (a file line like ``input.jsonl:12`` or a topic/partition/offset)."""

    source: str
    reason: str
    raw: bytes
