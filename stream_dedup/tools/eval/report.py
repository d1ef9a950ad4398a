"""Rendering comparison rows for people (aligned text tables) and for programs (JSON).

The JSON shape is a contract other tools read: ``{"rows": [{"method", "precision", "recall",
"f1", "msgs_per_s", "per_kind", "hard_negatives_flagged", ...}]}`` with fractions (not
percents); keys after those may be added, never renamed. Strategy comparisons add
``"fingerprint_only": [{"method", "at_k", "best", "curve"}]`` (`distances.Curve`); repeated runs
add ``"speed_ratios": {method: [the first row's speed over this method's, one a run]}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from statistics import median
from typing import TYPE_CHECKING, Any

from stream_dedup.tools.eval.distances import Curve
from stream_dedup.tools.eval.runner import Row, speed_ratios

if TYPE_CHECKING:
    from stream_dedup.tools.eval.compare import Comparison

_CURVE_HEADER = ["method", "P@k", "R@k", "F1@k", "best F1", "at t", "P", "R", "hard-neg flagged"]


def render_text(rows: Sequence[Row], curves: Sequence[Curve] = (), k: int = 3,
                ratios: Mapping[str, Sequence[float]] | None = None) -> str:
    """The scores table, then per-kind recall and hard negatives flagged per kind, then stage
    throughput when any row has it, the first row's speed as a multiple of each other's (and
    over repeated runs, `ratios`), then the fingerprint-alone scores when strategies were
    compared."""
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
    for title, field in (("recall per edit kind", "per_kind"),
                         ("hard negatives flagged per kind", "hard_negatives_per_kind")):
        kinds = _keys(getattr(row.scores, field) for row in rows)
        if kinds:
            cells = [[row.method, *(_fraction(getattr(row.scores, field).get(k)) for k in kinds)]
                     for row in rows]
            sections.append(f"{title}\n" + _table(["method", *kinds], cells))
    stages = _keys(row.stage_msgs_per_s for row in rows)
    if stages:
        cells = [
            [row.method, *(_rate(row.stage_msgs_per_s.get(s)) for s in stages)] for row in rows
        ]
        sections.append("msgs/s per stage\n" + _table(["method", *stages], cells))
    if len(rows) > 1 and rows[0].msgs_per_s:
        sections.append(f"{rows[0].method} speed against each: " + ", ".join(
            f"{method} {ratio:.2f}x" for method, (ratio,) in speed_ratios([rows]).items()))
    if ratios:
        sections.append(_over_runs(rows[0].method, ratios))
    if curves:
        sections.append(f"fingerprint alone: a duplicate when the nearest earlier message is "
                        f"within t bits (k = {k}; no anchors, no verification)\n"
                        + _table(_CURVE_HEADER, [_curve_cells(c, k) for c in curves]))
    return "\n\n".join(sections) + "\n"


def as_json(rows: Sequence[Row], curves: Sequence[Curve] = (), k: int = 3,
            ratios: Mapping[str, Sequence[float]] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"rows": [_row_json(row) for row in rows]}
    if curves:
        out["fingerprint_only"] = [_curve_json(c, k) for c in curves]
    if ratios:
        out["speed_ratios"] = {method: list(values) for method, values in ratios.items()}
    return out


def render_json(rows: Sequence[Row], curves: Sequence[Curve] = (), k: int = 3,
                ratios: Mapping[str, Sequence[float]] | None = None) -> str:
    return json.dumps(as_json(rows, curves, k, ratios), ensure_ascii=False, indent=2) + "\n"


def _over_runs(first: str, ratios: Mapping[str, Sequence[float]]) -> str:
    """The first method's speed as a multiple of each other's over repeated runs."""
    runs = len(next(iter(ratios.values())))
    return (f"{first} speed against each over {runs} runs (min / median / max): " + ", ".join(
        f"{method} {min(values):.2f}x / {median(values):.2f}x / {max(values):.2f}x"
        for method, values in ratios.items()))


def render_markdown(found: Comparison, k: int, title: str) -> str:
    """The same tables as `render_text`, as Markdown, headed by the stream's name and notes."""
    rows = found.rows
    out = [f"## {title}", ""]
    out += [f"- {note}" for note in found.notes] + ([""] if found.notes else [])
    out.append(_markdown(["method", "P", "R", "F1", "hard negatives flagged", "msgs/s"], [
        [row.method, _fraction(row.scores.precision), _fraction(row.scores.recall),
         _fraction(row.scores.f1), _fraction(row.scores.hard_negatives_flagged),
         _rate(row.msgs_per_s)] for row in rows]))
    for label, field in (("recall per edit kind", "per_kind"),
                         ("hard negatives flagged per kind", "hard_negatives_per_kind")):
        kinds = _keys(getattr(row.scores, field) for row in rows)
        if kinds:
            out += ["", label, "", _markdown(["method", *kinds], [
                [row.method, *(_fraction(getattr(row.scores, field).get(n)) for n in kinds)]
                for row in rows])]
    if found.ratios:
        out += ["", _over_runs(rows[0].method, found.ratios)]
    if found.curves:
        out += ["", f"fingerprint alone (distance to the nearest earlier message <= t; k = {k})",
                "", _markdown(_CURVE_HEADER, [_curve_cells(c, k) for c in found.curves])]
    return "\n".join(out) + "\n"


def _curve_cells(c: Curve, k: int) -> list[str]:
    t = c.best()
    return [c.method, _fraction(c.precision[k]), _fraction(c.recall[k]), _fraction(c.f1[k]),
            _fraction(c.f1[t]), str(t), _fraction(c.precision[t]), _fraction(c.recall[t]),
            _fraction(c.hard_negatives_flagged[t])]


def _curve_json(c: Curve, k: int) -> dict[str, Any]:
    def at(t: int) -> dict[str, float]:
        return {"threshold": t, "precision": float(c.precision[t]),
                "recall": float(c.recall[t]), "f1": float(c.f1[t]),
                "hard_negatives_flagged": float(c.hard_negatives_flagged[t])}

    return {"method": c.method, "at_k": at(k), "best": at(c.best()),
            "curve": {"precision": c.precision.tolist(), "recall": c.recall.tolist()}}


def _markdown(header: list[str], cells: list[list[str]]) -> str:
    lines = [header, ["---"] * len(header), *cells]
    return "\n".join("| " + " | ".join(line) + " |" for line in lines)


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
