"""Scale of the block tables: fill RocksDB with up to 10M fingerprints and measure queries.

    python bench/scale.py [--sizes 100000 1000000 10000000] [--queries 20000] [--state DIR]

At each size it prints the per-query cost (the engine's batch probe: one multi-get of every
table's bucket plus the XOR/popcount over what comes back), candidates per query (bucket entries
compared), resident memory and
state bytes per stored fingerprint. Fingerprints are random: candidates are the layout's floor,
T * N / 2^b. Filling writes every bucket once per step (the batch insert with a large batch).
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time

import numpy as np
import results

from stream_dedup.config import Settings
from stream_dedup.engine.batch import LOOKUPS_ONLY
from stream_dedup.engine.index.layout import make_layout
from stream_dedup.engine.index.probe import AnchorQuery, BatchProbe
from stream_dedup.engine.index.tables import ENTRY, bucket_key
from stream_dedup.engine.stored import TABLES
from stream_dedup.state import WriteSet, open_store


def fill(store, layout, fps: np.ndarray, seqs: np.ndarray, chunk: int = 2_000_000) -> None:
    """Append entries to their buckets, one read and one write per touched bucket per chunk."""
    for start in range(0, len(fps), chunk):
        f, s = fps[start : start + chunk], seqs[start : start + chunk]
        keys = layout.keys(f)
        for t in range(len(layout.tables)):
            order = np.argsort(keys[t], kind="stable")
            k, entries = keys[t][order], np.empty(len(order), dtype=ENTRY)
            entries["fp"], entries["seq"] = f[order], s[order]
            cuts = np.flatnonzero(np.diff(k)) + 1
            starts = np.r_[0, cuts]
            names = [bucket_key(t, int(k[i])) for i in starts]
            old = store.get_many("blocks", names)
            writes = WriteSet()
            for name, prev, part in zip(names, old, np.split(entries, cuts), strict=True):
                writes.put("blocks", name, (prev or b"") + part.tobytes())
            store.write(writes)
        print(f"  filled {start + len(f):,}", flush=True)


def query(store, layout, fps: np.ndarray, batch: int = 1000) -> tuple[float, float]:
    """Seconds per query and bucket entries compared per query, through the engine's batch probe
    with the default settings (its staged inserts are dropped: the state does not change)."""
    index = Settings().index
    candidates = 0
    no_anchors = [np.zeros(0, np.uint64)] * batch
    began = time.perf_counter()
    for start in range(0, len(fps), batch):
        part = fps[start : start + batch]
        probe = BatchProbe(store, layout, postings=1, stored=0)
        seqs = np.arange(2**39, 2**39 + len(part), dtype=np.uint64)
        query = AnchorQuery(no_anchors[: len(part)], np.zeros((len(part), 1), np.int64),
                            np.ones((len(part), 1), np.int64), np.ones(2, np.int64))
        found = probe.run(part, seqs, query, index.candidate_distance, index.max_candidates)
        candidates += found.compared
    return (time.perf_counter() - began) / len(fps), candidates / len(fps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    parser.add_argument("--queries", type=int, default=20_000)
    parser.add_argument("--layout", default="blocks", choices=["blocks", "permuted"])
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--state", help="state directory (default: a temporary one)")
    args = parser.parse_args()
    layout = make_layout(args.layout, args.k)
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory(prefix="stream-dedup-scale-") as tmp:
        store = open_store("rocksdb", args.state or f"{tmp}/state", TABLES,
                           lookups_only=LOOKUPS_ONLY)
        stored = 0
        rows: list[tuple[int, float, float, float, float]] = []
        print(f"layout {args.layout} k={args.k}: {len(layout.tables)} tables")
        print(f"{'stored':>12} {'us/query':>9} {'cand/query':>11} {'us/cand':>8} "
              f"{'RSS MiB':>8} {'bytes/msg':>10}")
        for size in sorted(args.sizes):
            new = size - stored
            fps = rng.integers(0, 2**64, new, dtype=np.uint64)
            fill(store, layout, fps, np.arange(stored, size, dtype=np.uint64))
            stored = size
            per_query, cands = query(store, layout,
                                     rng.integers(0, 2**64, args.queries, dtype=np.uint64))
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"{stored:>12,} {per_query * 1e6:>9.1f} {cands:>11.1f} "
                  f"{per_query * 1e6 / max(cands, 1):>8.3f} {rss:>8.0f} "
                  f"{store.disk_bytes() / stored:>10.1f}", flush=True)
            rows.append((stored, round(per_query * 1e6, 1), round(cands, 1), round(rss),
                         round(store.disk_bytes() / stored, 1)))
        store.close()
    results.write("index-scale", f"Layout {args.layout}, k = {args.k}: {len(layout.tables)} "
                  f"tables; {args.queries:,} random queries at each size.\n\n" + results.table(
                      rows, ("stored", "µs/query", "entries compared/query", "peak RSS MiB",
                             "state bytes/fingerprint")))


if __name__ == "__main__":
    main()
