"""How well the index finds copies: on a labelled stream, the share of copies whose true source
(an earlier message of the same cluster) is among the candidates the index proposes, and the
share flagged, per length band of the copy's normalized text (up to 15, 16-40, over 40
characters), and per kind of copy. Exact copies are left out: the exact stage finds them before
the index is asked.

    python bench/candidates.py bench/data/short.jsonl.gz [more streams] [--dev] [--name NAME]

writes bench/results/candidates.md (the docs include it).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

from results import dev_stream, table, write

from stream_dedup.config import Settings
from stream_dedup.engine.batch import open_engine
from stream_dedup.tools.eval.labelled import read_labelled, true_duplicates

BANDS = ((15, "up to 15"), (40, "16-40"), (sys.maxsize, "over 40"))


def band(length: int) -> str:
    return next(name for top, name in BANDS if length <= top)


def measure(path: Path, settings: Settings, batch: int = 4000) -> tuple[list[list[object]],
                                                                        list[list[object]]]:
    """(rows per length band, rows per kind of copy) of one stream."""
    stream = read_labelled(path)
    messages = [item.message for item in stream]
    candidates: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as state:
        engine = open_engine(settings, state)
        engine.on_candidates = candidates.__setitem__
        try:
            verdicts = []
            for start in range(0, len(messages), batch):
                verdicts += engine.process(messages[start:start + batch])
                print(f"  {path.name}: {len(verdicts):,}/{len(messages):,}", file=sys.stderr)
            texts, _ = engine.normalize([m.text for m in messages])
        finally:
            engine.close()
    cluster_of = {item.message.id: item.cluster for item in stream}
    total, found, flagged = Counter(), Counter(), Counter()
    kinds_total, kinds_found = Counter(), Counter()
    for item, copy, text, verdict in zip(stream, true_duplicates(stream), texts, verdicts,
                                         strict=True):
        if not copy or verdict.decision == "exact":
            continue
        hit = any(cluster_of[c] == item.cluster for c in candidates.get(item.message.id, []))
        key = band(len(text))
        total[key] += 1
        found[key] += hit
        flagged[key] += verdict.decision != "unique"
        for edit in item.edits:
            kinds_total[edit] += 1
            kinds_found[edit] += hit
    bands = [[path.name, name, total[name], f"{found[name] / total[name]:.3f}",
              f"{flagged[name] / total[name]:.3f}"] for _, name in BANDS if total[name]]
    kinds = [[path.name, k, kinds_total[k], f"{kinds_found[k] / kinds_total[k]:.3f}"]
             for k in sorted(kinds_total)]
    return bands, kinds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("streams", nargs="*", type=Path, help="labelled streams (JSONL, .gz)")
    parser.add_argument("--dev", action="store_true",
                        help="also the dev stream named by STREAM_DEDUP_DEV_STREAM")
    parser.add_argument("--name", default="candidates", help="bench/results/NAME.md")
    args = parser.parse_args()
    bands, kinds = [], []
    for path in [*args.streams, *([dev_stream()] if args.dev else [])]:
        b, k = measure(path, Settings())
        bands += b
        kinds += k
    body = ("Copies that are not exact, by the length of their normalized text: the share whose "
            "true source is among the index's candidates (candidate recall) and the share "
            "flagged.\n\n"
            + table(bands, ("stream", "length", "copies", "candidate recall", "flagged"))
            + "\n\nCandidate recall per kind of copy (a copy with two edits counts for both).\n\n"
            + table(kinds, ("stream", "kind", "copies", "candidate recall")))
    print(body)
    write(args.name, body)


if __name__ == "__main__":
    main()
