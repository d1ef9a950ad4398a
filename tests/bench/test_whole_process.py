"""bench/whole_process.py: a process timed from outside, its wall time, peak memory and log."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

GROW = "import sys, time; b = b'x' * (MiB << 20); time.sleep(0.2); print('said', file=sys.stderr)"
FAIL = "import sys; print('broken', file=sys.stderr); sys.exit(3)"


def test_a_process_is_timed_with_its_own_peak_memory_and_what_it_said(whole_process,
                                                                       tmp_path: Path) -> None:
    # The child starts as a copy of this process: it must grow well past this one to be seen.
    grow = int(whole_process.own_mib()) + 200
    wall, peak, said = whole_process.timed([sys.executable, "-c", GROW.replace("MiB", str(grow))],
                                           {}, tmp_path / "out")
    assert wall >= 0.2 and grow <= peak < grow + 100 and said.strip() == "said"


def test_a_failing_process_stops_the_bench_with_what_it_said(whole_process,
                                                             tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="exited with 3:\nbroken"):
        whole_process.timed([sys.executable, "-c", FAIL], {}, tmp_path / "out")
