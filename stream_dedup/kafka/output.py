"""One record the service writes: where it goes, what it carries, and why (its kind)."""

from __future__ import annotations

from dataclasses import dataclass

from . import headers as h


@dataclass(slots=True)
class Output:
    """One record to write. `kind` is what it is: unique, duplicate or dead_letter.

    Not frozen: a frozen dataclass is several times slower to build, once per record; nothing
    changes an output once routed."""

    kind: str
    topic: str
    key: bytes | None
    value: bytes | None
    headers: h.Headers
    timestamp_ms: int
    partition: int | None = None  # None: the producer's partitioner (by key)
