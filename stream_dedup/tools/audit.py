"""Auditing precision on an unlabelled stream: sample what the engine flags, let people judge it.

Labelled streams with synthetic edits show part of the truth; real feeds in their natural order
show the rest (template lines, captions, headlines inside leads). `sample_pairs` runs file mode
over a stream and draws a seeded random sample of flagged pairs, plus near misses: pairs a looser
configuration would flag and the configured one does not. People fill in `label` (dup, related,
different) and `note`; `score` reports precision with a 95% Wilson interval, overall, by verdict
reason and by length band.
"""

from __future__ import annotations

import json
import math
import random
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from ..config import Settings
from ..decode import decode
from ..engine.batch import LOOKUPS_ONLY, Engine
from ..engine.stored import TABLES
from ..errors import InputError
from ..files import read_lines
from ..records import Message, Verdict
from ..state import MemoryStore, open_store

LABELS = ("dup", "related", "different")
BANDS = ((0, 10), (10, 30), (30, 80), (80, 10**9))


def _messages(path: str, settings: Settings) -> Iterator[Message]:
    for number, raw in read_lines(path):
        record = decode(raw, f"{path}:{number}", f"line:{number}", number * 1000, settings.input)
        if isinstance(record, Message):
            yield record


def _verdicts(messages: list[Message], settings: Settings,
              progress: Callable[[int], None] | None) -> list[Verdict]:
    out: list[Verdict] = []
    with tempfile.TemporaryDirectory(prefix="stream-dedup-audit-") as tmp:
        engine = Engine(settings, open_store(settings.state.backend, f"{tmp}/state", TABLES,
                                             lookups_only=LOOKUPS_ONLY))
        size = settings.engine.batch_size
        for start in range(0, len(messages), size):
            out.extend(engine.process(messages[start : start + size]))
            if progress:
                progress(len(out))
        engine.close()
    return out


def looser(settings: Settings) -> Settings:
    """The configuration whose extra flags are the near misses: thresholds 0.15 lower."""
    v = settings.verify
    return replace(settings, verify=replace(
        v, min_jaccard=max(0.05, v.min_jaccard - 0.15),
        min_containment=max(0.05, v.min_containment - 0.15),
        max_length_ratio=v.max_length_ratio * 2,
    ))


def _pair(kind: str, message: Message, verdict: Verdict, texts: dict[str, str]) -> dict:
    return {
        "kind": kind, "id": message.id, "text": message.text,
        "matched_id": verdict.matched_id, "matched_text": texts.get(verdict.matched_id or "", ""),
        "verdict": verdict.decision.value, "reason": verdict.reason,
        "distance": verdict.distance, "similarity": verdict.similarity, "label": None, "note": "",
    }


def sample_pairs(path: str, settings: Settings, sample: int, near_misses: int, seed: int,
                 progress: Callable[[int], None] | None = None) -> tuple[list[dict], dict]:
    """(pairs to judge, counts): `sample` flagged pairs and `near_misses` near misses."""
    messages = list(_messages(path, settings))
    texts = {m.id: m.text for m in messages}
    verdicts = _verdicts(messages, settings, progress)
    loose = _verdicts(messages, looser(settings), None)
    flagged = [(m, v) for m, v in zip(messages, verdicts, strict=True) if v.is_duplicate]
    missed = [(m, lv) for m, v, lv in zip(messages, verdicts, loose, strict=True)
              if lv.is_duplicate and not v.is_duplicate]
    rng = random.Random(seed)
    chosen = rng.sample(flagged, min(sample, len(flagged)))
    pairs = [_pair("flagged", m, v, texts) for m, v in chosen]
    pairs += [_pair("near_miss", m, v, texts)
              for m, v in rng.sample(missed, min(near_misses, len(missed)))]
    counts = {"messages": len(messages), "flagged": len(flagged), "near_misses": len(missed)}
    return pairs, counts


@dataclass(frozen=True, slots=True)
class Precision:
    """Judged-dup share of judged flagged pairs, with its 95% Wilson interval."""

    dup: int
    judged: int

    @property
    def value(self) -> float:
        return self.dup / self.judged if self.judged else math.nan

    @property
    def interval(self) -> tuple[float, float]:
        n, z = self.judged, 1.96
        if not n:
            return math.nan, math.nan
        p = self.dup / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return max(0.0, centre - half), min(1.0, centre + half)

    def __str__(self) -> str:
        low, high = self.interval
        return f"{self.value:.3f} [{low:.3f}, {high:.3f}] ({self.dup}/{self.judged})"


def read_pairs(path: str) -> list[dict]:
    """Judged pairs; a line that is not a JSON object or carries an unknown label is an error."""
    pairs = []
    for number, raw in read_lines(path):
        if not raw.strip():
            continue
        try:
            pair = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputError(path, f"not JSON: {exc.msg}", number) from None
        if not isinstance(pair, dict) or pair.get("label") not in (*LABELS, None):
            raise InputError(path, f"label must be one of {', '.join(LABELS)} or null", number)
        pairs.append(pair)
    return pairs


def _band(pair: dict) -> str:
    shorter = min(len(pair.get("text", "")), len(pair.get("matched_text", "")))
    low, high = next(b for b in BANDS if b[0] <= shorter < b[1])
    return f"{low}-{high - 1} chars" if high < 10**9 else f">={low} chars"


def score(pairs: Iterable[dict]) -> dict[str, dict[str, Precision]]:
    """Precision of the judged flagged pairs: overall, by reason (its stage word) and by band."""
    groups: dict[str, dict[str, list[int]]] = {"all": defaultdict(lambda: [0, 0]),
                                                 "reason": defaultdict(lambda: [0, 0]),
                                                 "length": defaultdict(lambda: [0, 0])}
    for pair in pairs:
        if pair.get("kind") != "flagged" or pair.get("label") is None:
            continue
        hit = int(pair["label"] == "dup")
        for group, key in (("all", "all"), ("reason", pair["reason"].split(":")[0]),
                           ("length", _band(pair))):
            groups[group][key][0] += hit
            groups[group][key][1] += 1
    return {g: {k: Precision(*v) for k, v in sorted(d.items())} for g, d in groups.items()}


def replay_verdict(pair: dict, settings: Settings) -> Verdict:
    """The verdict today's configuration gives a judged pair on its own: a fresh engine, the
    earlier text (`matched_text`), then the later one (`text`)."""
    # Not closed: closing only snapshots the Bloom filter into the throwaway in-memory store.
    engine = Engine(settings, MemoryStore(TABLES))
    return engine.process([Message("a", pair["matched_text"], 0),
                           Message("b", pair["text"], 1000)])[1]


def still_flagged(pairs: Iterable[dict], settings: Settings) -> list[dict]:
    """The judged flagged pairs that `replay_verdict` still flags, with today's reason: after a
    rule that only removes flags, their precision is an unbiased estimate of today's (the sample
    stays a random sample of what is still flagged)."""
    out = []
    for pair in pairs:
        if pair.get("kind") != "flagged":
            continue
        verdict = replay_verdict(pair, settings)
        if verdict.is_duplicate:
            out.append({**pair, "reason": verdict.reason})
    return out


def write_pairs(pairs: list[dict], out: str) -> None:
    Path(out).write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs),
                         encoding="utf-8")
