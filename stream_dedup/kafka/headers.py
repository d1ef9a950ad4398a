"""The `dedup.*` headers stream-dedup adds to the records it writes.

Values are UTF-8 text so that any client (kcat's ``%h`` included) shows them as they are.
Incoming headers with the ``dedup.`` prefix are dropped before ours are added, so a record that
passes through stream-dedup twice carries one verdict, not two that disagree.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..records import Decision, Verdict

PREFIX = "dedup."
VERDICT = "dedup.verdict"  # unique | exact | near
REASON = "dedup.reason"  # the engine's reason, e.g. "near: distance 2, similarity 0.91"
MATCHED_ID = "dedup.matched_id"  # the earlier message a duplicate repeats, or the related one
DISTANCE = "dedup.distance"  # Simhash Hamming distance to the matched message
SIMILARITY = "dedup.similarity"  # the verifying measure against the matched message
GUARD = "dedup.guard"  # what makes a near match only related: number, date, entity, negation,
# antonym, swap (comma-separated), or "contained" (a short text inside a much longer one)
REPLAYED = "dedup.replayed"  # "true" when this is the first verdict given again on replay
ERROR = "dedup.error"  # dead letters: why the record could not be read
ORIGINAL_SIZE = "dedup.original_size"  # dead letters cut to fit their topic: the value's bytes
DIGEST = "dedup.digest"  # and "sha256:<hex>" of the whole value
SOURCE_TOPIC = "dedup.source.topic"
SOURCE_PARTITION = "dedup.source.partition"
SOURCE_OFFSET = "dedup.source.offset"

Headers = list[tuple[str, bytes]]
# Headers that are the same for many records, encoded once (they are built for every record).
_DECISIONS = {d: (VERDICT, d.value.encode()) for d in Decision}
_REPLAYED = (REPLAYED, b"true")


def kept(headers: Iterable[tuple[str, bytes]] | None) -> Headers:
    """The input's own headers, minus any earlier ``dedup.*`` ones."""
    if not headers:  # most records have none
        return []
    return [(k, v) for k, v in headers if not k.startswith(PREFIX)]


def verdict_headers(v: Verdict) -> Headers:
    """Headers that say the verdict; optional fields only when the verdict has them."""
    out: Headers = [_DECISIONS[v.decision], (REASON, v.reason.encode())]
    if v.matched_id is not None:
        out.append((MATCHED_ID, v.matched_id.encode()))
    if v.distance is not None:
        out.append((DISTANCE, str(v.distance).encode()))
    if v.similarity is not None:
        out.append((SIMILARITY, f"{v.similarity:.4f}".encode()))
    if v.guard is not None:
        out.append((GUARD, v.guard.encode()))
    if v.replayed:
        out.append(_REPLAYED)
    return out


def dead_letter_headers(reason: str, topic: str, partition: int, offset: int) -> Headers:
    """Headers of a dead letter: the reason and where the record was read."""
    return [(ERROR, reason.encode()), (SOURCE_TOPIC, topic.encode()),
            (SOURCE_PARTITION, str(partition).encode()), (SOURCE_OFFSET, str(offset).encode())]


def as_dict(headers: Iterable[tuple[str, bytes]]) -> dict[str, str]:
    """Headers as text, the last value of a repeated name winning (for tests and tools)."""
    return {k: v.decode("utf-8", "replace") for k, v in headers}
