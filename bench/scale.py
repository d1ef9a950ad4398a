"""Scale of the block tables: fill a RocksDB state to each size and measure inserts and queries.

    python bench/scale.py [--sizes 1000000 10000000 30000000] [--queries 20000] [--inserts 100000]
                          [--near 200000] [--capacity N] [--layout auto|blocks|permuted]
                          [--name NAME]

At each size, in a fresh state whose layout and store options are sized to the size (or to
`--capacity`), as the engine opens its state (`engine_store`):
* fingerprints: random ones, plus `--near` edited copies of the shipped streams' texts
  (one to three characters deleted, inserted or replaced, fingerprinted by the engine's
  strategy), so the buckets hold real near-duplicate clusters, not only the random floor;
* fill: all but the last `--inserts` through the bulk load (sorted SST files ingested and read
  back into the page cache as far as the system's available memory allows, as a service's bulk
  load does; a progress line on stderr), the last ones through the engine's batch insert
  (`BatchProbe`: one multi-get, the query, the appended buckets written), `engine.batch_size` at
  a time: insert µs a message;
* queries: random fingerprints, and fresh edited copies of the same texts (near-duplicate
  queries), through the batch probe (their inserts dropped): µs a query and bucket entries
  compared a query, KiB a query read from the disk (`/proc/self/io`);
* resident memory now and at its peak (the bulk load's included), the share of the state's
  files in the page cache as the queries start (`fincore`: what is not there is read from the
  disk), state bytes a stored fingerprint (after close).
Writes bench/results/index-scale.md (`--name`).
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import results

from stream_dedup.config import Settings
from stream_dedup.engine.batch import engine_store
from stream_dedup.engine.index import bulk
from stream_dedup.engine.index.layout import Layout, configured_layout
from stream_dedup.engine.index.probe import AnchorQuery, BatchProbe
from stream_dedup.engine.normalize import Normalizer
from stream_dedup.engine.strategies import make_strategy
from stream_dedup.state import WriteSet
from stream_dedup.state.rocksdb import directory_bytes

SETTINGS = Settings()
FILL = 1 << 24  # random fingerprints drawn at a time
INDEX_BLOCK_KB = 1  # `state.index_block_kb` for tables far larger than the block cache
HEADER = ("stored", "layout", "queries", "µs/query", "entries compared/query", "disk KiB/query",
          "insert µs/msg", "RSS MiB", "peak RSS MiB", "state files in page cache",
          "state B/fingerprint")


def corpus_texts() -> list[str]:
    """The distinct normalized texts of the shipped streams (the sample and bench/data)."""
    texts = []
    for path in [results.SAMPLE, *sorted(Path(__file__).parent.glob("data/*.jsonl.gz"))]:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            texts += [json.loads(line)["text"] for line in f if line.strip()]
    normalized = Normalizer(SETTINGS.normalize).with_clauses(texts)[0]
    return sorted({t for t in normalized if len(t) >= 8})


def edited(texts: list[str], count: int, rng: np.random.Generator) -> np.ndarray:
    """Fingerprints of `count` copies of random texts, each with one to three characters
    deleted, inserted (a character of the same text) or replaced."""
    strategy = make_strategy(SETTINGS.fingerprint)
    out = []
    for start in range(0, count, 20_000):
        copies = []
        for i in rng.integers(0, len(texts), min(20_000, count - start)).tolist():
            chars = list(texts[i])
            for _ in range(int(rng.integers(1, 4))):
                at, kind = int(rng.integers(0, len(chars))), int(rng.integers(0, 3))
                if kind == 0 and len(chars) > 2:
                    del chars[at]
                elif kind == 1:
                    chars.insert(at, chars[int(rng.integers(0, len(chars)))])
                else:
                    chars[at] = chars[int(rng.integers(0, len(chars)))]
            copies.append("".join(chars))
        fps, owner = strategy(copies)
        out.append(fps[np.r_[True, owner[1:] != owner[:-1]]])  # each copy's first row
    return np.concatenate(out)[:count]


class Bar:
    """A progress line on stderr, redrawn in place."""

    def __init__(self, label: str, total: int) -> None:
        self.label, self.total, self.started = label, total, time.perf_counter()

    def __call__(self, done: int) -> None:
        rate = done / max(time.perf_counter() - self.started, 1e-9)
        print(f"\r  {self.label}: {done:>13,} / {self.total:,} entries "
              f"({done / self.total:5.1%}, {rate:,.0f}/s)", end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        print(file=sys.stderr)


def no_anchors(n: int) -> AnchorQuery:
    return AnchorQuery(np.zeros(0, np.uint64), np.zeros((n, 1), np.int64),
                       np.ones((n, 1), np.int64), np.ones(2, np.int64))


def insert(store, layout: Layout, fps: np.ndarray, first_seq: int, batch: int) -> float:
    """Seconds a message to insert `fps` through the engine's batch probe and write."""
    index = SETTINGS.index
    began = time.perf_counter()
    for start in range(0, len(fps), batch):
        part = fps[start : start + batch]
        seqs = np.arange(first_seq + start, first_seq + start + len(part), dtype=np.uint64)
        probe = BatchProbe(store, layout, postings=1, stored=0)
        probe.run(part, seqs, no_anchors(len(part)), index.candidate_distance,
                  index.max_candidates)
        writes = WriteSet()
        probe.stage(writes)
        store.write(writes)
    return (time.perf_counter() - began) / max(len(fps), 1)


def query(store, layout: Layout, fps: np.ndarray, batch: int) -> tuple[float, float, float]:
    """Seconds a query, bucket entries compared and disk bytes read a query (the staged
    inserts dropped)."""
    index = SETTINGS.index
    compared = 0
    read = disk_read()
    began = time.perf_counter()
    for start in range(0, len(fps), batch):
        part = fps[start : start + batch]
        seqs = np.arange(2**39, 2**39 + len(part), dtype=np.uint64)
        probe = BatchProbe(store, layout, postings=1, stored=0)
        compared += probe.run(part, seqs, no_anchors(len(part)), index.candidate_distance,
                              index.max_candidates).compared
    spent = time.perf_counter() - began
    return spent / len(fps), compared / len(fps), (disk_read() - read) / len(fps)


def page_cached(state: str) -> str:
    """The share of the state's files the page cache holds (util-linux `fincore`)."""
    files = [str(p) for p in Path(state).glob("*.sst")]
    try:
        out = subprocess.run(["fincore", "--bytes", "--noheadings", "--raw", "-o", "RES,SIZE",
                              *files], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    held, size = np.array([line.split() for line in out.splitlines()], dtype=np.int64).sum(0)
    return f"{held / max(size, 1):.0%} of {size / 2**30:.1f} GiB"


def disk_read() -> int:
    """Bytes this process has had read from the disk (Linux `/proc/self/io`; 0 elsewhere):
    what the page cache did not hold."""
    try:
        with open("/proc/self/io") as f:
            return int(next(line for line in f if line.startswith("read_bytes:")).split()[1])
    except (OSError, StopIteration):
        return 0


def rss_mib() -> tuple[float, float]:
    """Resident memory now and at its peak."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return (pages * resource.getpagesize() / 2**20,
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def measure(size: int, args: argparse.Namespace, texts: list[str], state: str,
            rng: np.random.Generator) -> list[tuple[object, ...]]:
    settings = replace(SETTINGS, index=replace(SETTINGS.index, layout=args.layout,
                                               max_distance=args.k,
                                               capacity=args.capacity or size),
                       state=replace(SETTINGS.state, backend="rocksdb",
                                     index_block_kb=INDEX_BLOCK_KB))
    layout = configured_layout(settings)
    bits = sorted({layout.key_bits(t) for t in range(len(layout.tables))})
    name = f"{len(layout.tables)} tables of {'-'.join(map(str, bits))}-bit keys"
    print(f"{size:,}: {layout.describe(args.capacity or size)}", flush=True)
    near = min(args.near, size)
    fps = np.empty(size, dtype=np.uint64)  # filled in place: no second copy at 100M
    for start in range(0, size - near, FILL):
        stop = min(start + FILL, size - near)
        fps[start:stop] = rng.integers(0, 2**64, stop - start, dtype=np.uint64)
    fps[size - near :] = edited(texts, near, rng)
    rng.shuffle(fps)
    store = engine_store(settings, state, sync=False)
    loaded = size - min(args.inserts, size)
    bar = Bar("bulk load", loaded * len(layout.tables))
    began = time.perf_counter()
    bulk.load(store, layout, fps[:loaded], np.arange(loaded, dtype=np.uint32), bar)
    bar.close()
    print(f"  bulk load {time.perf_counter() - began:.1f} s; state files in the page cache: "
          f"{page_cached(state)}", flush=True)
    per_insert = insert(store, layout, fps[loaded:], loaded, SETTINGS.engine.batch_size)
    del fps
    cached = page_cached(state)  # as the queries find it
    rows = []
    for kind, queries in (("random", rng.integers(0, 2**64, args.queries, dtype=np.uint64)),
                          ("near-duplicate", edited(texts, args.queries, rng))):
        per_query, compared, read = query(store, layout, queries, SETTINGS.engine.batch_size)
        now, peak = rss_mib()
        rows.append((size, name, kind, round(per_query * 1e6, 1), round(compared, 1),
                     round(read / 1024, 2),
                     round(per_insert * 1e6, 1), round(now), round(peak), cached))
        print(f"  {kind:>14} queries: {per_query * 1e6:8.1f} µs/query {compared:10.1f} "
              f"compared/query {read / 1024:.2f} disk KiB/query; insert "
              f"{per_insert * 1e6:.1f} µs/msg; RSS {now:.0f} MiB "
              f"(peak {peak:.0f}); state files in the page cache {cached}", flush=True)
    store.close()
    per_fp = directory_bytes(state) / size
    print(f"  state {per_fp:.1f} bytes a fingerprint", flush=True)
    return [(*row, round(per_fp, 1)) for row in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000, 30_000_000])
    parser.add_argument("--queries", type=int, default=20_000)
    parser.add_argument("--inserts", type=int, default=100_000,
                        help="the last fingerprints, inserted through the engine's batch insert")
    parser.add_argument("--near", type=int, default=200_000,
                        help="edited copies of shipped texts among the stored fingerprints")
    parser.add_argument("--capacity", type=int, default=0,
                        help="size the layout for this many (default: each size)")
    parser.add_argument("--layout", default="auto", choices=["auto", "blocks", "permuted"])
    parser.add_argument("--k", type=int, default=SETTINGS.index.max_distance)
    parser.add_argument("--state", help="directory for the states (default: a temporary one)")
    parser.add_argument("--name", default="index-scale",
                        help="results file, bench/results/NAME.md (a long run of its own)")
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    texts = corpus_texts()
    rows = []
    with tempfile.TemporaryDirectory(prefix="stream-dedup-scale-", dir=args.state) as tmp:
        for size in sorted(args.sizes):
            rows += measure(size, args, texts, str(Path(tmp) / f"state-{size}"), rng)
    results.write(args.name, (
        f"k = {args.k}; layout {args.layout}, sized to "
        f"{'each size' if not args.capacity else f'{args.capacity:,}'}. Stored: random "
        f"fingerprints plus {args.near:,} edited copies of {len(texts):,} shipped texts; all but "
        f"the last {args.inserts:,} bulk-loaded (its files read back into the page cache as far "
        f"as the available memory allows: the share held as the queries start is in the table, "
        f"the rest is read from the disk), those through the batch insert "
        f"({SETTINGS.engine.batch_size:,} a batch). {args.queries:,} queries of each kind. "
        f"state.block_cache_mb {SETTINGS.state.block_cache_mb}, state.index_block_kb "
        f"{INDEX_BLOCK_KB}.\n\n"
        + results.table(rows, HEADER)))


if __name__ == "__main__":
    main()
