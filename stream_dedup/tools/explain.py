"""Why two texts get the verdict they get: what `stream-dedup check` prints and the inspector's
check form shows, computed once for both."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..config import Settings
from ..engine.batch import Engine
from ..engine.fingerprint import Batch, simhash
from ..engine.index.layout import hamming
from ..engine.meaning import Span, classify
from ..engine.normalize import Normalizer
from ..engine.stored import TABLES
from ..engine.verify import similarity
from ..records import Message, Verdict
from ..state import open_store


@dataclass(frozen=True, slots=True)
class Explained:
    """The second text decided against the first, with everything that led there: the
    normalized texts, their Simhash fingerprints and distance, the similarity, the differing
    spans of the normalized texts with their meaning class, and the verdict."""

    first: str
    second: str
    fingerprints: tuple[int, int]
    distance: int
    similarity: float
    spans: list[Span]
    verdict: Verdict


def explain(first: str, second: str, settings: Settings) -> Explained:
    """Decide `second` against `first` on a fresh in-memory engine, as the service would."""
    settings = replace(settings, state=replace(settings.state, backend="memory"))
    (a, b), (_, clauses) = Normalizer(settings.normalize).with_clauses([first, second])
    fps = simhash(Batch.of([a, b]), settings.fingerprint.ngram)
    engine = Engine(settings, open_store("memory", "", TABLES))
    verdicts = engine.process([Message("first", first, 0), Message("second", second, 1)])
    score, _, _ = similarity(a, b, settings.verify)
    spans = classify(a, b, None, clauses) if a != b else []
    return Explained(a, b, (int(fps[0]), int(fps[1])), int(hamming(fps[0], fps[1])),
                     float(score), spans, verdicts[1])
