"""`stream-dedup eval`: our engine and, with --compare, the anchors, on one labelled stream; with
--strategies, one row and one distance curve per fingerprint strategy (`compare.py`)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ...config import Settings
from ...errors import StreamDedupError
from .anchors import MinHashLSHDetector, SimhashPackageDetector
from .compare import Comparison, compare
from .detector import Detector
from .labelled import LabelledMessage, read_labelled
from .ours import EngineDetector
from .report import render_json, render_markdown, render_text
from .runner import Row, bracketed, run, speed_ratios


def _progress(name: str) -> object:
    def show(done: int, total: int) -> None:
        if done == total or done % 10_000 < 1000:
            print(f"  {name}: {done:,}/{total:,}", file=sys.stderr)

    return show


def _say(line: str) -> None:
    print(line, file=sys.stderr)


def _ours(settings: Settings, state: str, labelled: Sequence[LabelledMessage],
          when: str) -> Row:
    """One pass of our engine over the stream, its state in `state`."""
    ours = EngineDetector(settings, state)
    try:
        row = run(ours, labelled, settings.engine.batch_size, _progress(ours.name + when))
    finally:
        ours.close()
    _say(f"  {ours.name}{when}: {row.msgs_per_s:,.0f} msgs/s")
    return row


def _comparison(args: argparse.Namespace, settings: Settings,
                labelled: Sequence[LabelledMessage], tmp: str) -> Comparison:
    """One run: our engine (or each strategy) and, with --compare, the anchors; state in `tmp`
    unless --state names a directory."""
    Path(tmp).mkdir(parents=True, exist_ok=True)
    found = Comparison()
    if args.strategies:
        found = compare(labelled, settings, args.strategies, args.state or tmp, _say)
    else:
        found.rows.append(_ours(settings, args.state or f"{tmp}/state", labelled, ""))
    if args.compare:
        anchors: list[Detector] = [
            MinHashLSHDetector(0.4), MinHashLSHDetector(0.5), SimhashPackageDetector(),
            MinHashLSHDetector(0.4, bulk=True),
            MinHashLSHDetector(0.4, bulk=True, fast_hash=True),
        ]
        for detector in anchors:
            found.rows.append(run(detector, labelled, settings.engine.batch_size,
                                  _progress(detector.name)))
        if not args.strategies and args.state is None:
            # Ours again after the anchors, on fresh state: the two passes bracket them.
            again = _ours(settings, f"{tmp}/again", labelled, " (after the anchors)")
            found.rows[0] = bracketed(found.rows[0], again)
    return found


def run_eval(args: argparse.Namespace, settings: Settings) -> int:
    if args.plot and not args.strategies:
        raise StreamDedupError("--plot draws one curve per strategy: add --strategies")
    if args.runs > 1 and not args.compare:
        raise StreamDedupError("--runs repeats the comparison with the anchors: add --compare")
    if args.runs > 1 and args.state:
        raise StreamDedupError("--runs needs a fresh state each run: leave out --state")
    labelled = read_labelled(args.input)
    with tempfile.TemporaryDirectory(prefix="stream-dedup-eval-") as tmp:
        found = _comparison(args, settings, labelled, f"{tmp}/1")
        runs = [found.rows]
        for number in range(2, args.runs + 1):
            _say(f"run {number} of {args.runs}")
            runs.append(_comparison(args, settings, labelled, f"{tmp}/{number}").rows)
    if args.runs > 1:
        found.ratios = speed_ratios(runs)
    k = settings.index.max_distance
    print(render_json(found.rows, found.curves, k, found.ratios) if args.json
          else render_text(found.rows, found.curves, k, found.ratios))
    title = Path(args.input).name
    if args.markdown:
        Path(args.markdown).write_text(render_markdown(found, k, title), encoding="utf-8")
        _say(f"wrote {args.markdown}")
    if args.plot:
        from .plot import plot_curves

        plot_curves(found.curves, k, title, args.plot)
        _say(f"wrote {args.plot}")
    return 0
