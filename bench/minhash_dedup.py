"""The plain MinHashLSH dedup a user would otherwise write, as a whole process: the yardstick
for `stream-dedup dedup` timed from outside (start-up, reading, deciding, writing, exit).

    python bench/minhash_dedup.py INPUT.jsonl[.gz] > unique.jsonl

Reads JSONL records with a `text` field and writes those that are not near duplicates of an
earlier kept one, as read: datasketch's MinHashLSH (threshold 0.4, 128 permutations, character
3-grams, a MinHash per message as datasketch's README shows it), the `datasketch-0.4` row of
`stream-dedup eval --compare`, whose detector it runs.
"""

from __future__ import annotations

import json
import sys

from stream_dedup.files import read_lines
from stream_dedup.records import Message
from stream_dedup.tools.eval.anchors import MinHashLSHDetector

_BATCH = 1000


def main(path: str) -> int:
    detector = MinHashLSHDetector(threshold=0.4)
    out = sys.stdout.buffer
    lines = [raw for _, raw in read_lines(path)]
    for start in range(0, len(lines), _BATCH):
        batch = lines[start : start + _BATCH]
        messages = [Message(str(n), json.loads(raw)["text"], n) for n, raw in enumerate(batch)]
        for raw, duplicate in zip(batch, detector.flags(messages), strict=True):
            if not duplicate:
                out.write(raw + b"\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
