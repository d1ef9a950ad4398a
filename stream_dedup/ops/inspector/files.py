"""A file run opened in the inspector (`stream-dedup inspect`): the decisions JSONL of
`stream-dedup dedup --decisions` pushed through the same bounded ring as the service's verdicts,
with the texts read from the input file the run read.

The decisions carry ids, not texts, so the input is read once for the texts the ring needs (the
messages it holds, the earlier messages they name, the last messages of the run); memory stays
bounded by the ring whatever the size of the run."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterator

from ...config import Settings
from ...decode import decode
from ...errors import InputError
from ...files import read_lines
from ...records import Decision, Message, Verdict
from ..recent import RecentVerdicts, fill

VERDICT_KEYS = ("matched_id", "distance", "similarity", "guard")


def _verdict(path: str, number: int, raw: bytes) -> tuple[Verdict, list[str] | None]:
    try:
        row = json.loads(raw)
        verdict = Verdict(str(row["id"]), Decision(row["verdict"]), str(row["reason"]),
                          *(row.get(k) for k in VERDICT_KEYS),
                          replayed=bool(row.get("replayed", False)))
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise InputError(path, "not a decision line (a JSON object with id, verdict and "
                         f"reason, as `dedup --decisions` writes): {exc}", number) from None
    candidates = row.get("candidates")
    return verdict, [str(c) for c in candidates] if isinstance(candidates, list) else None


def _decisions(path: str) -> Iterator[tuple[Verdict, list[str] | None]]:
    for number, raw in read_lines(path):
        if raw.strip():
            yield _verdict(path, number, raw)


def _texts(path: str, settings: Settings, wanted: set[str]) -> dict[str, str]:
    """The texts of the `wanted` ids in the input file, decoded as `dedup` decodes them."""
    out: dict[str, str] = {}
    for number, raw in read_lines(path):
        record = decode(raw, f"{path}:{number}", f"line:{number}", number, settings.input)
        if isinstance(record, Message) and record.id in wanted:
            out[record.id] = record.text
    return out


def load_run(decisions: str, inputs: str | None, settings: Settings) -> RecentVerdicts:
    """The ring of a file run: its decisions, with texts when the run's input is given."""
    m = settings.metrics
    first = RecentVerdicts(m.inspector_verdicts, m.inspector_unique_every)
    last: deque[str] = deque(maxlen=m.inspector_verdicts)


    def ids_only() -> Iterator[tuple[Verdict, str | None, int | None]]:
        for verdict, _ in _decisions(decisions):
            last.append(verdict.id)
            yield verdict, None, None

    fill(first, ids_only())
    texts: dict[str, str] = {}
    if inputs is not None:
        held = first.seen()
        wanted = {s.verdict.id for s in held} | set(last)
        wanted |= {s.verdict.matched_id for s in held if s.verdict.matched_id}
        texts = _texts(inputs, settings, wanted)
    ring = RecentVerdicts(m.inspector_verdicts, m.inspector_unique_every)

    def rows() -> Iterator[tuple[Verdict, str | None, int | None]]:
        for verdict, candidates in _decisions(decisions):
            if candidates is not None:
                ring.candidates_tried(verdict.id, candidates)
            yield verdict, texts.get(verdict.id), None

    fill(ring, rows())
    for s in ring.seen():
        matched = s.verdict.matched_id
        if matched and ring.text(matched) is None and matched in texts:
            ring.remember_text(matched, texts[matched])
    return ring
