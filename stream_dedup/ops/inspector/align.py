"""Two normalized texts laid side by side: equal runs and differing spans in order, each span
with its meaning class, so a page can show them as aligned rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...engine.meaning import Span


@dataclass(frozen=True, slots=True)
class Row:
    """One aligned row: `left` in the first text stands where `right` is in the second; `kind`
    is the class of a differing span, None for text both share."""

    left: str
    right: str
    kind: str | None = None
    changes_meaning: bool = False


def aligned(a: str, b: str, spans: Sequence[Span]) -> list[Row]:
    """The rows of `a` against `b` given `classify`'s spans (in text order on both sides)."""
    rows: list[Row] = []
    i = j = 0
    for s in sorted(spans, key=lambda s: (s.i1, s.j1)):
        if s.i1 > i or s.j1 > j:
            rows.append(Row(a[i:s.i1], b[j:s.j1]))
        rows.append(Row(a[s.i1:s.i2], b[s.j1:s.j2], s.kind, s.changes_meaning))
        i, j = max(i, s.i2), max(j, s.j2)
    if i < len(a) or j < len(b):
        rows.append(Row(a[i:], b[j:]))
    return rows
