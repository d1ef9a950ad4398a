"""Labelled evaluation streams: messages in arrival order with the truth about each.

A stream is JSON lines (plain or gzip), one object a line::

    {"id": "m17", "text": "...", "cluster": "c12", "kind": "dup:retweet+typo"}

with an optional integer ``timestamp_ms``. `cluster` groups a text with its copies: a message is a
true duplicate exactly when an earlier message has the same cluster. `kind` only names how the
message was made (``orig``, ``dup:<edit>+<edit>``, ``neg:<how>``) so scores can be broken down.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from stream_dedup.errors import InputError
from stream_dedup.records import Message

# Messages without a timestamp arrive 10 ms apart from a fixed instant, so every run sees the same
# event times and time-windowed engines behave the same from run to run.
SYNTHETIC_EPOCH_MS = 1_700_000_000_000
SYNTHETIC_STEP_MS = 10

_KIND_PREFIXES = ("dup:", "neg:")


@dataclass(frozen=True, slots=True)
class LabelledMessage:
    """A message with its truth: the `cluster` of copies it belongs to and the `kind` of edit."""

    message: Message
    cluster: str
    kind: str

    @property
    def edits(self) -> tuple[str, ...]:
        """The single edit names of a duplicate (``dup:retweet+typo`` → retweet, typo), else ()."""
        if not self.kind.startswith("dup:"):
            return ()
        return tuple(self.kind[4:].split("+"))

    @property
    def is_hard_negative(self) -> bool:
        return self.kind.startswith("neg:")


def read_labelled(path: str | Path) -> list[LabelledMessage]:
    """Read a whole labelled stream in order; raises `InputError` naming the first bad line."""
    name = str(path)
    labelled: list[LabelledMessage] = []
    first_line_of_id: dict[str, int] = {}
    for number, line in _lines(Path(path)):
        if not line.strip():
            continue
        item = _parse(name, number, line, index=len(labelled))
        earlier = first_line_of_id.setdefault(item.message.id, number)
        if earlier != number:
            raise InputError(name, f"id {item.message.id!r} already used on line {earlier}", number)
        labelled.append(item)
    return labelled


def true_duplicates(labelled: Sequence[LabelledMessage]) -> list[bool]:
    """For each message, whether an earlier message of the stream has the same cluster."""
    seen: set[str] = set()
    truth = []
    for item in labelled:
        truth.append(item.cluster in seen)
        seen.add(item.cluster)
    return truth


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    opener = gzip.open if path.name.endswith(".gz") else open
    number = 0
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                yield number, line
    except UnicodeDecodeError as exc:
        raise InputError(str(path), f"not UTF-8 text ({exc.reason})", number + 1) from exc
    except EOFError as exc:
        raise InputError(str(path), "the compressed file ends early", number + 1) from exc
    except OSError as exc:  # missing, unreadable, or not gzip at all
        raise InputError(str(path), exc.strerror or str(exc)) from exc


def _parse(name: str, number: int, line: str, index: int) -> LabelledMessage:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(name, f"not valid JSON ({exc.msg})", number) from exc
    if not isinstance(record, dict):
        raise InputError(name, "expected a JSON object", number)
    fields = {}
    for key in ("id", "text", "cluster", "kind"):
        value = record.get(key)
        if not isinstance(value, str):
            raise InputError(name, f"field {key!r} must be a string", number)
        fields[key] = value
    kind = fields["kind"]
    if kind != "orig" and not (kind.startswith(_KIND_PREFIXES) and len(kind) > 4):
        raise InputError(name, f"kind {kind!r} is not orig, dup:<edits> or neg:<how>", number)
    timestamp = record.get("timestamp_ms", SYNTHETIC_EPOCH_MS + index * SYNTHETIC_STEP_MS)
    if not isinstance(timestamp, int) or isinstance(timestamp, bool):
        raise InputError(name, "field 'timestamp_ms' must be an integer", number)
    message = Message(id=fields["id"], text=fields["text"], timestamp_ms=timestamp)
    return LabelledMessage(message=message, cluster=fields["cluster"], kind=kind)
