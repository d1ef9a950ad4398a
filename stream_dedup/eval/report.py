"""Rendering comparison rows for people (aligned text tables) and for programs (JSON).

The JSON shape is a contract other tools read: ``{"rows": [{"method", "precision", "recall",
"f1", "msgs_per_s", "per_kind", "hard_negatives_flagged", ...}]}`` with fractions (not
percents); keys after those may be added, never renamed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from stream_dedup.eval.runner import Row


def render_text(rows: Sequence[Row]) -> str:
    """The scores table, then per-kind recall, then stage throughput when any row has it."""
    summary = _table(
        ["method", "P", "R", "F1", "msgs/s", "hard-neg flagged"],
        [
            [
                row.method,
                _fraction(row.scores.precision),
                _fraction(row.scores.recall),
                _fraction(row.scores.f1),
                _rate(row.msgs_per_s),
                _fraction(row.scores.hard_negatives_flagged),
            ]
            for row in rows
        ],
    )
    sections = [summary]
    kinds = _keys(row.scores.per_kind for row in rows)
    if kinds:
        cells = [
            [row.method, *(_fraction(row.scores.per_kind.get(k)) for k in kinds)] for row in rows
        ]
        sections.append("recall per edit kind\n" + _table(["method", *kinds], cells))
    stages = _keys(row.stage_msgs_per_s for row in rows)
    if stages:
        cells = [
            [row.method, *(_rate(row.stage_msgs_per_s.get(s)) for s in stages)] for row in rows
        ]
        sections.append("msgs/s per stage\n" + _table(["method", *stages], cells))
    return "\n\n".join(sections) + "\n"


def as_json(rows: Sequence[Row]) -> dict[str, Any]:
    return {"rows": [_row_json(row) for row in rows]}


def render_json(rows: Sequence[Row]) -> str:
    return json.dumps(as_json(rows), ensure_ascii=False, indent=2) + "\n"


def _row_json(row: Row) -> dict[str, Any]:
    return {
        "method": row.method,
        "precision": row.scores.precision,
        "recall": row.scores.recall,
        "f1": row.scores.f1,
        "msgs_per_s": row.msgs_per_s,
        "per_kind": dict(row.scores.per_kind),
        "hard_negatives_flagged": row.scores.hard_negatives_flagged,
        "hard_negatives_per_kind": dict(row.scores.hard_negatives_per_kind),
        "stage_msgs_per_s": dict(row.stage_msgs_per_s),
    }


def _keys(mappings: Iterable[Mapping[str, float]]) -> list[str]:
    """Keys of all mappings in first-seen order, so columns line up across rows."""
    return list(dict.fromkeys(key for mapping in mappings for key in mapping))


def _fraction(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _table(header: list[str], cells: list[list[str]]) -> str:
    """Method column left-aligned, numbers right-aligned, two spaces between columns."""
    lines = [header, *cells]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for line in lines:
        first = line[0].ljust(widths[0])
        rest = (cell.rjust(width) for cell, width in zip(line[1:], widths[1:], strict=True))
        out.append("  ".join([first, *rest]).rstrip())
    return "\n".join(out)
