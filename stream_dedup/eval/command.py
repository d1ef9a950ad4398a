"""`stream-dedup eval`: our engine and, with --compare, the anchors, on one labelled stream."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence

from ..config import Settings
from ..engine import Engine
from ..records import Message
from ..state import open_store
from .anchors import MinHashLSHDetector, SimhashPackageDetector
from .detector import Detector
from .labelled import read_labelled
from .report import render_json, render_text
from .runner import Row, run


class EngineDetector:
    """The engine as an evaluation detector, with its state in RocksDB (or as configured)."""

    name = "stream-dedup"

    def __init__(self, settings: Settings, state_path: str) -> None:
        store = open_store(settings.state.backend, state_path, settings.state.block_cache_mb,
                           settings.state.sync_writes)
        self.engine = Engine(settings, store)

    def flags(self, batch: Sequence[Message]) -> list[bool]:
        return [v.is_duplicate for v in self.engine.process(batch)]

    def stage_seconds(self) -> dict[str, float]:
        return dict(self.engine.stats.stage_seconds)

    def close(self) -> None:
        self.engine.close()


def _progress(name: str) -> object:
    def show(done: int, total: int) -> None:
        if done == total or done % 10_000 < 1000:
            print(f"  {name}: {done:,}/{total:,}", file=sys.stderr)

    return show


def run_eval(args: argparse.Namespace, settings: Settings) -> int:
    labelled = read_labelled(args.input)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="stream-dedup-eval-") as tmp:
        ours = EngineDetector(settings, args.state or f"{tmp}/state")
        try:
            rows.append(run(ours, labelled, settings.engine.batch_size, _progress(ours.name)))
        finally:
            ours.close()
    if args.compare:
        anchors: list[Detector] = [MinHashLSHDetector(0.4), MinHashLSHDetector(0.5),
                                   SimhashPackageDetector()]
        for detector in anchors:
            rows.append(run(detector, labelled, settings.engine.batch_size,
                            _progress(detector.name)))
    print(render_json(rows) if args.json else render_text(rows))
    return 0
