"""State bytes a message, and what restarts add to them: the engine over the dev stream
(`STREAM_DEDUP_DEV_STREAM`, else the shipped sample) at the default config, into a fresh RocksDB
state, everything the engine keeps included (stored messages with their normalized texts for
verification, index tables, ids, expiry order, snapshots, RocksDB's own files).

    python bench/state_bench.py [--restarts 20] [--runs 3]

Prints the engine's messages a second (best of `--runs`: each run decides the stream into a
fresh state), the state's bytes after the close, bytes a message, and the bytes after each of
`--restarts` opens and closes of the engine on that state (every start used to leave a file):
the last must stay within a few percent of the first.
"""

from __future__ import annotations

import argparse
import gzip
import tempfile
import time
from pathlib import Path

import results

from stream_dedup.config import Settings
from stream_dedup.decode import decode
from stream_dedup.engine.batch import open_engine
from stream_dedup.records import Message
from stream_dedup.state.rocksdb import directory_bytes


def stream(settings: Settings) -> list[Message]:
    with gzip.open(results.dev_stream(), "rb") as f:
        lines = [line for line in f if line.strip()]
    out = [decode(raw, "bench", str(n), 1_700_000_000_000 + n, settings.input)
           for n, raw in enumerate(lines)]
    return [m for m in out if isinstance(m, Message)]


def decide(settings: Settings, messages: list[Message], path: str) -> float:
    """Seconds the engine took to decide `messages` into the state at `path` and close it."""
    engine = open_engine(settings, path)
    size = settings.engine.batch_size
    started = time.perf_counter()
    for i in range(0, len(messages), size):
        engine.process(messages[i:i + size])
    engine.close()
    return time.perf_counter() - started


def restarts(settings: Settings, path: str, count: int) -> list[int]:
    """The state's bytes after each of `count` opens and closes of the engine."""
    sizes = []
    for _ in range(count):
        open_engine(settings, path).close()
        sizes.append(directory_bytes(path))
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--restarts", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    settings = Settings()
    messages = stream(settings)
    seconds = []
    with tempfile.TemporaryDirectory(prefix="state-bench-") as tmp:
        for run in range(args.runs):
            path = str(Path(tmp) / f"state-{run}")
            seconds.append(decide(settings, messages, path))
        size = directory_bytes(path)
        sizes = restarts(settings, path, args.restarts)
    n = len(messages)
    rows = [["messages", f"{n:,}"],
            ["engine msgs/s, state closed (best of runs)", f"{n / min(seconds):,.0f}"],
            ["state bytes after the run", f"{size:,}"],
            ["state bytes a message", f"{size / n:.1f}"],
            ["after 1 restart", f"{sizes[0]:,}" if sizes else "-"],
            [f"after {args.restarts} restarts", f"{sizes[-1]:,} ({sizes[-1] / sizes[0] - 1:+.1%})"
             if sizes else "-"]]
    body = (f"Stream: {results.dev_stream().name}; host: {results.host_speed()}\n\n"
            + results.table(rows, ["figure", "value"]))
    print(body)
    results.write("state", body, argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
