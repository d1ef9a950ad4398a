"""Whole processes timed from outside, start-up and exit included: `stream-dedup dedup` on a
ten-line file and on a stream, and the plain MinHashLSH script (`minhash_dedup.py`) on the same
stream, the last two in turn so that each pair shares the host's speed of the moment.

    python bench/whole_process.py [STREAM] [--runs 5]

Each figure is the min, median and max over the runs: wall seconds, and the peak resident memory
of the process (its own maximum, from `wait4`; a process starts as a copy of this one, so no
peak reads below this bench's own, printed beside). Before them, each command runs once uncounted
(the kernels and resources cached, the files in the page cache), and the ten-line file and the
stream once each as on a fresh machine: empty numba and resource caches, what the first run
compiles and prepares said on its log. STREAM: the labelled dev stream (STREAM_DEDUP_DEV_STREAM)
or the shipped sample. Writes bench/results/whole-process.md.
"""

from __future__ import annotations

import argparse
import gzip
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import results

HEADER = ("command", "runs", "wall s (min / median / max)", "peak MiB (median)")


def timed(argv: Sequence[str], env: dict[str, str], out: Path) -> tuple[float, float, str]:
    """(wall seconds, peak MiB, what it said on stderr) of one process writing to `out`."""
    with out.open("wb") as sink, tempfile.TemporaryFile() as said:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=sink, stderr=said)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        said.seek(0)
        text = said.read().decode("utf-8", "replace")
    if proc.returncode:
        sys.exit(f"{' '.join(argv)} exited with {proc.returncode}:\n{text}")
    return wall, usage.ru_maxrss / 1024, text


def own_mib() -> float:
    """This process's peak resident memory, MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def spread(values: Sequence[float]) -> str:
    return " / ".join(f"{v:.2f}" for v in (min(values), statistics.median(values), max(values)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stream", nargs="?", type=Path, default=results.dev_stream())
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="whole-process-"))
    ten = work / "ten.jsonl"
    with gzip.open(args.stream) if args.stream.suffix == ".gz" else args.stream.open("rb") as f:
        ten.write_bytes(b"".join(line for _, line in zip(range(10), f, strict=False)))
    ours = [sys.executable, "-m", "stream_dedup.cli", "dedup"]
    commands = {
        "ten": (f"stream-dedup dedup on a {ten.stat().st_size:,}-byte file of ten lines",
                [*ours, str(ten), "--quiet"]),
        "stream": (f"stream-dedup dedup {args.stream.name}", [*ours, str(args.stream), "--quiet"]),
        "minhash": (f"python bench/minhash_dedup.py {args.stream.name}",
                    [sys.executable, str(Path(__file__).with_name("minhash_dedup.py")),
                     str(args.stream)]),
    }
    env = dict(os.environ)
    fresh = {**env, "NUMBA_CACHE_DIR": str(work / "numba"),
             "STREAM_DEDUP_CACHE_DIR": str(work / "resources")}
    first = []
    for key in ("ten", "stream"):
        wall, peak, said = timed(commands[key][1], fresh, work / "out")
        prepared = [line.split(": ", 1)[-1].split(", once")[0] for line in said.splitlines()
                    if "once" in line]
        first.append(f"- {commands[key][0]}: {wall:.2f} s, {peak:.0f} MiB; said it was "
                     f"{'; '.join(prepared) if prepared else 'preparing nothing'}")
        print(first[-1], file=sys.stderr)
    for _, argv in commands.values():
        timed(argv, env, work / "out")
    figures: dict[str, list[tuple[float, float]]] = {key: [] for key in commands}
    for run in range(args.runs):
        for key, (_, argv) in commands.items():
            wall, peak, _ = timed(argv, env, work / "out")
            figures[key].append((wall, peak))
        print(f"run {run + 1}: " + ", ".join(f"{k} {v[-1][0]:.2f} s" for k, v in figures.items()),
              file=sys.stderr)
    rows = [(commands[key][0], args.runs, spread([w for w, _ in runs]),
             f"{statistics.median(p for _, p in runs):.0f}") for key, runs in figures.items()]
    ratios = [m[0] / s[0] for s, m in zip(figures["stream"], figures["minhash"], strict=True)]
    body = (f"Whole processes, start-up and exit included; the stream and the MinHashLSH script "
            f"run in turn, {args.runs} pairs.\n\n{results.table(rows, HEADER)}\n\n"
            f"stream-dedup is **{statistics.median(ratios):.2f}x** as fast as the MinHashLSH "
            f"script on the whole process (median of the pairs; {spread(ratios)}). No peak reads "
            f"below this bench's own memory, {own_mib():.0f} MiB.\n\n"
            f"The first run on a fresh machine (empty kernel and resource caches):\n\n"
            + "\n".join(first) + "\n")
    results.write("whole-process", body)
    print(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
