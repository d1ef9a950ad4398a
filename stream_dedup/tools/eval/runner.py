"""Feeding a labelled stream through a detector and turning the result into one table row.

Only the detector's `flags` calls are timed (wall clock), so reading the file, slicing batches
and scoring never count against a method's throughput.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from stream_dedup.tools.eval.detector import Detector, StageTimed
from stream_dedup.tools.eval.labelled import LabelledMessage
from stream_dedup.tools.eval.score import Scores, score

Progress = Callable[[int, int], None]
"""Called after each batch with (messages done, messages in the stream)."""


@dataclass(frozen=True, slots=True)
class Row:
    """One method's line in the comparison: its scores and its speed.

    `stage_msgs_per_s` is filled only for detectors that report stage timings (`StageTimed`).
    """

    method: str
    scores: Scores
    msgs_per_s: float
    stage_msgs_per_s: Mapping[str, float] = field(default_factory=dict)


def run(
    detector: Detector,
    labelled: Sequence[LabelledMessage],
    batch_size: int = 1000,
    progress: Progress | None = None,
) -> Row:
    """Feed `labelled` to `detector` in order, `batch_size` messages a call, and score it."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    messages = [item.message for item in labelled]
    stages_before = _stage_seconds(detector)
    flags: list[bool] = []
    elapsed = 0.0
    for start in range(0, len(messages), batch_size):
        batch = messages[start : start + batch_size]
        began = time.perf_counter()
        batch_flags = detector.flags(batch)
        elapsed += time.perf_counter() - began
        if len(batch_flags) != len(batch):
            raise ValueError(
                f"{detector.name} returned {len(batch_flags)} flags for {len(batch)} messages"
            )
        flags.extend(batch_flags)
        if progress is not None:
            progress(len(flags), len(messages))
    stages_after = _stage_seconds(detector)
    stage_rates = {
        stage: len(messages) / (seconds - stages_before.get(stage, 0.0))
        for stage, seconds in stages_after.items()
        if seconds > stages_before.get(stage, 0.0)
    }
    rate = len(messages) / elapsed if elapsed > 0 else 0.0
    return Row(detector.name, score(flags, labelled), rate, stage_rates)


def bracketed(first: Row, second: Row) -> Row:
    """One row from two passes of the same detector that bracket the others of a comparison
    (before them and after them, fresh state each): its speed over both (N messages twice in
    the two passes' summed time, per stage likewise), so a machine that speeds up or slows down
    during the comparison moves our figure as it moves theirs. Both passes must flag alike."""
    if first.scores != second.scores:
        raise ValueError(f"{first.method}: the two passes scored differently")
    return Row(first.method, first.scores, _over_both(first.msgs_per_s, second.msgs_per_s),
               {stage: _over_both(rate, second.stage_msgs_per_s.get(stage, 0.0))
                for stage, rate in first.stage_msgs_per_s.items()})


def _over_both(rate_a: float, rate_b: float) -> float:
    """The rate of two passes over the same messages taken together (harmonic mean)."""
    return 2 / (1 / rate_a + 1 / rate_b) if rate_a > 0 and rate_b > 0 else 0.0


def _stage_seconds(detector: Detector) -> dict[str, float]:
    return dict(detector.stage_seconds()) if isinstance(detector, StageTimed) else {}


def speed_ratios(runs: Sequence[Sequence[Row]]) -> dict[str, list[float]]:
    """The first row's speed as a multiple of each other row's, in each of `runs` (the same
    methods in the same order every run, each scoring alike in all): measured in one run, a
    ratio moves less with the host than either speed does, and its spread over runs is the
    host's noise."""
    first = runs[0]
    for rows in runs[1:]:
        for row, same in zip(rows, first, strict=True):
            if row.method != same.method or row.scores != same.scores:
                raise ValueError(f"{row.method}: runs of the comparison scored differently")
    return {row.method: [rows[0].msgs_per_s / rows[n].msgs_per_s for rows in runs]
            for n, row in enumerate(first) if n and all(rows[n].msgs_per_s for rows in runs)}
