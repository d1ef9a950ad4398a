"""`stream-dedup eval --strategies`: the fingerprint strategies compared on one labelled stream.

Per strategy, two measurements on the same messages:
* a row: the engine with `fingerprint.strategy` set to it, everything else as configured (exact
  stage, anchors, verification), state in its own directory;
* a curve: the strategy's fingerprints alone, flagged by distance (`distances.py`).

Strategies that need corpus statistics read `fingerprint.stats`; when it is not set, they are
fitted first on the stream's own texts, never its labels, and the report says so. drpkp reads
paragraphs: its row runs with `normalize.paragraphs` on (a stream without line breaks
normalizes the same either way).
"""

from __future__ import annotations

import argparse
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ...config import STATS_STRATEGIES, FingerprintSettings, NormalizeSettings, Settings
from ...engine.normalize import Normalizer
from ...engine.strategies import make_strategy
from ...engine.strategies.fit import fit
from .distances import Curve, curve, fingerprints, nearest_distances
from .labelled import LabelledMessage
from .ours import EngineDetector
from .runner import Row, run

ALL_STRATEGIES: tuple[str, ...] = typing.get_args(
    typing.get_type_hints(FingerprintSettings)["strategy"])

Say = Callable[[str], None]


def parse_strategies(value: str) -> tuple[str, ...]:
    """`all` or comma-separated strategy names, in the order given (argparse `type=`)."""
    if value.strip() == "all":
        return ALL_STRATEGIES
    names = tuple(dict.fromkeys(n.strip() for n in value.split(",") if n.strip()))
    unknown = [n for n in names if n not in ALL_STRATEGIES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown strategy {', '.join(unknown) or repr(value)} "
            f"(choose all, or from: {', '.join(ALL_STRATEGIES)})")
    return names


@dataclass(slots=True)
class Comparison:
    """The rows, the curves, and notes a reader of the results must see."""

    rows: list[Row] = field(default_factory=list)
    curves: list[Curve] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # With repeated runs: the first row's speed as a multiple of each other's, run by run.
    ratios: dict[str, list[float]] = field(default_factory=dict)


def compare(labelled: Sequence[LabelledMessage], settings: Settings, names: Sequence[str],
            workdir: str, say: Say) -> Comparison:
    """Run every named strategy on the stream; state and fitted statistics go to `workdir`."""
    result = Comparison()
    stats = settings.fingerprint.stats
    if stats is None and STATS_STRATEGIES.intersection(names):
        stats = str(Path(workdir) / "stats.npz")
        result.notes.append("fingerprint.stats not set: corpus statistics were fitted on the "
                            "stream's own texts (never its labels)")
        say(result.notes[-1])
        texts = normalized(labelled, settings.normalize)
        fit(texts, settings.fingerprint.top_m,
            lambda step, done, total: say(f"  fit {step}: {done:,}/{total:,}")).save(stats)
    if "drpkp" in names and not settings.normalize.paragraphs:
        result.notes.append("drpkp ran with normalize.paragraphs on (it reads paragraphs)")
    for name in names:
        chosen = strategy_settings(settings, name, stats)
        detector = EngineDetector(chosen, str(Path(workdir) / name), name)
        try:
            result.rows.append(run(detector, labelled, chosen.engine.batch_size,
                                   lambda done, total, n=name: _progress(say, n, done, total)))
        finally:
            detector.close()
        texts = normalized(labelled, chosen.normalize)
        fps, owner = fingerprints(make_strategy(chosen.fingerprint), texts,
                                  chosen.engine.batch_size)
        distances = nearest_distances(fps, owner, len(texts), chosen.fingerprint.drpkp_share,
                                      lambda done, total, n=name: say(
                                          f"  {n} distances: {done:,}/{total:,}"))
        result.curves.append(curve(name, distances, labelled))
    return result


def strategy_settings(settings: Settings, name: str, stats: str | None) -> Settings:
    """The configured settings with `name` as the strategy (and paragraphs kept for drpkp)."""
    normalize = settings.normalize
    if name == "drpkp":
        normalize = replace(normalize, paragraphs=True)
    return replace(settings, normalize=normalize,
                   fingerprint=replace(settings.fingerprint, strategy=name, stats=stats))


def normalized(labelled: Sequence[LabelledMessage], settings: NormalizeSettings) -> list[str]:
    """The stream's texts as the engine sees them."""
    normalizer = Normalizer(settings)
    texts = [item.message.text for item in labelled]
    return [t for start in range(0, len(texts), 1000)
            for t in normalizer.normalize_batch(texts[start : start + 1000])]


def _progress(say: Say, name: str, done: int, total: int) -> None:
    if done == total or done % 10_000 < 1000:
        say(f"  {name}: {done:,}/{total:,}")
