"""What the fingerprint stage computes for a batch of messages: the engine's normalization, exact
hash and index keys (`features.features`, the engine's own function, so both agree), turned into
the message's probes. Pure: no Kafka, no state.

Per message, numbered 0.. in this order: the exact hash (when `exact.enabled`); one probe per
(fingerprint row, block table) with that row's fingerprint; one per anchor, those the engine
posts a message under as `ANCHOR` and the rest looked up only (`LOOKUP`), family by family
(`features.FAMILIES`). A message whose normalized text is empty makes the exact probe only (the
engine decides it from the exact stage alone).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..config import Settings
from ..engine import fingerprint as fpr
from ..engine.exact import content_hash
from ..engine.features import FAMILIES, features
from ..engine.index.layout import configured_layout
from ..engine.mood import kept_ending
from ..engine.normalize import Clauses, Normalizer
from ..engine.strategies import make_strategy
from ..records import Message
from .probes import ANCHOR, BLOCK, EXACT, LOOKUP, Probe


@dataclass(frozen=True, slots=True)
class Probed:
    """A message's normalized text, fingerprint (its first row's), anchors and probes."""

    message: Message
    text: str
    fp: int
    anchors: tuple[int, ...]  # per family
    probes: tuple[Probe, ...]
    clauses: Clauses = ()  # where the normalized text's clauses end


class Prober:
    """Normalizes and fingerprints batches of messages as the engine does."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._normalizer = Normalizer(settings.normalize)
        self._strategy = make_strategy(settings.fingerprint)
        self._layout = configured_layout(settings)
        fpr.warm_up()  # the compiled kernels load (or compile) now, not in the first batch

    def run(self, messages: Sequence[Message]) -> list[Probed]:
        s = self.settings
        texts, clauses = self._normalizer.with_clauses([m.text for m in messages])
        near = [i for i, t in enumerate(texts) if t]
        near_texts = [texts[i] for i in near]
        f = features(near_texts, np.zeros(len(near), np.uint64), self._strategy, s.fingerprint,
                     s.index)
        fps, owner = f.fps, f.owner
        keys = self._layout.keys(fps)
        rows: dict[int, list[int]] = {}
        for row, i in enumerate(owner.tolist()):
            rows.setdefault(near[i], []).append(row)
        anchors_of = dict(zip(near, zip(f.anchors, f.posted.tolist(), f.families.tolist(),
                                        strict=True), strict=True))
        none = (np.zeros(0, np.uint64), [0] * FAMILIES, [0] * FAMILIES)
        out = []
        for i, (m, text) in enumerate(zip(messages, texts, strict=True)):
            wanted: list[tuple[int, int, int, int, str]] = []  # kind, table, value, fp, text
            if s.exact.enabled:
                wanted.append((EXACT, 0, content_hash(text, m.text), 0,
                               kept_ending(text, m.text)))
            own = rows.get(i, [])
            for row in own:
                wanted += [(BLOCK, t, int(keys[t][row]), int(fps[row]), text)
                           for t in range(len(keys))]
            first_fp = int(fps[own[0]]) if own else 0
            mine, posted, families = anchors_of.get(i, none)
            family = np.arange(FAMILIES).repeat(families).tolist()
            rank = [r for count in families for r in range(count)]  # within its family
            wanted += [(ANCHOR, f, a, first_fp, text) if r < posted[f] else (LOOKUP, f, a, 0, "")
                       for a, f, r in zip(mine.tolist(), family, rank, strict=True)]
            probes = tuple(Probe(kind, table, value, m.timestamp_ms, m.id, n, fp, posted)
                           for n, (kind, table, value, fp, posted) in enumerate(wanted))
            out.append(Probed(m, text, first_fp, tuple(families), probes, clauses[i]))
        return out
