"""Where the benchmarks leave their current figures: one Markdown file each in bench/results/,
which the docs include. Each file says when it was measured, by which command, and how fast this
host was at the time (shared hosts run at very different speeds from one hour to the next, so a
figure without that line cannot be compared with another).
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import platform
import shlex
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
REPO = RESULTS.parents[1]
SAMPLE = Path(__file__).resolve().parents[1] / "stream_dedup" / "data" / "sample.jsonl.gz"


def dev_stream() -> Path:
    """The labelled dev stream named by STREAM_DEDUP_DEV_STREAM, else the shipped sample."""
    named = os.environ.get("STREAM_DEDUP_DEV_STREAM")
    return Path(named) if named else SAMPLE


def round_of(record: dict[str, object], number: int) -> dict[str, object]:
    """A stream's record as the `number`th repeat of the stream has it: a fresh id (a repeat is
    not a replay of the same message) and its text marked by the round (round 0 as it is), so
    one round's texts repeat no earlier round's and a round's duplicates are its own."""
    marked = f"{record['text']}（第{number}轮）" if number else record["text"]
    return {**record, "id": f"{record['id']}-r{number}", "text": marked}


_COMMON_COUNT = 1000  # jieba corpus count from which a single character is a common one


@functools.cache
def _common_characters() -> str:
    """The characters jieba's dictionary counts at least `_COMMON_COUNT` times as words of their
    own (~4,000: the characters of everyday text), in code point order."""
    import jieba

    jieba.setLogLevel(60)
    jieba.initialize()
    return "".join(sorted(w for w, n in jieba.dt.FREQ.items()
                          if len(w) == 1 and n >= _COMMON_COUNT and "\u4e00" <= w <= "\u9fff"))


def shifted(text: str, number: int) -> str:
    """`text` with each common character (`_common_characters`) replaced by the one `number` *
    97 places after it in their list (wrapping round), every other character kept: another
    round's texts differ from this one's in nearly every character and are still made of
    everyday characters (which the word dictionary and tagger know), while an edit of a text is
    still the same edit of its shift (a typo, a cut, an added tag or emoji; not a traditional
    form, whose shift is not the shifted simplified one's)."""
    if not number:
        return text
    common = _common_characters()
    step = number * 97
    moved = {c: common[(i + step) % len(common)] for i, c in enumerate(common)}
    return "".join(moved.get(c, c) for c in text)


def repeated(lines: Sequence[bytes], records: int) -> list[bytes]:
    """The JSONL stream `lines` repeated until it holds `records` records (at least the stream
    once), round n with fresh ids (`-r<n>`: a repeat is not a replay) and `shifted` texts: each
    round has the stream's duplicates among its own records and none of another round's."""
    base = [json.loads(line) for line in lines]
    total = max(records, len(base))
    out: list[bytes] = []
    number = 0
    while len(out) < total:
        out += (json.dumps({**r, "id": f"{r['id']}-r{number}",
                            "text": shifted(r["text"], number)}, ensure_ascii=False).encode()
                for r in base)
        number += 1
    return out[:total]


def host_speed() -> str:
    """One line on this host now: cores, Python, and `json.loads` of the shipped sample's records
    a second (best of three passes), a yardstick that moves with the host's load."""
    with gzip.open(SAMPLE, "rb") as f:
        lines = [line for line in f if line.strip()]
    return (f"{os.cpu_count()} cores, Python {platform.python_version()}, json.loads "
            f"{json_loads_per_s(lines):,.0f} records/s")


def json_loads_per_s(lines: Sequence[bytes]) -> float:
    """Records `json.loads` reads a second, best of three passes over `lines`."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        for line in lines:
            json.loads(line)
        best = min(best, time.perf_counter() - started)
    return len(lines) / best


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command as it was run, from the repository's top; a file outside the repository is
    named by its file name (where it lies is this host's business, not the figures')."""
    args = list(sys.argv if argv is None else argv)
    script = Path(args[0])
    if script.suffix == ".py":
        args[0] = f"python bench/{script.name}"
    args[1:] = [_outside_named(a) for a in args[1:]]
    return " ".join(shlex.quote(a) if i else a for i, a in enumerate(args))


def _outside_named(arg: str) -> str:
    path = Path(arg)
    if path.is_absolute() and path.is_file() and REPO not in path.resolve().parents:
        return path.name
    return arg


def table(rows: Sequence[Sequence[object]], header: Sequence[str]) -> str:
    """A Markdown table; numbers with thousands separators, floats to two decimals."""

    def cell(value: object) -> str:
        if isinstance(value, float):
            return f"{value:,.2f}" if abs(value) < 100 else f"{value:,.0f}"
        if isinstance(value, int):
            return f"{value:,}"
        return str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def nested_table(figures: Mapping[str, Mapping[str, float]]) -> str:
    """A table of (section, figure, value) from the nested figures a bench returns."""
    return table([(section, name, value) for section, values in figures.items()
                  for name, value in values.items()], ("part", "figure", "value"))


def write(name: str, body: str, argv: Sequence[str] | None = None) -> Path:
    """bench/results/NAME.md: the header line (date, command, host speed), then `body`."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.md"
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    path.write_text(f"Measured {when} by `{command_line(argv)}`; this host then: "
                    f"{host_speed()}.\n\n{body.rstrip()}\n", encoding="utf-8")
    print(f"wrote {path.relative_to(RESULTS.parents[1])}", file=sys.stderr)
    return path


def stamp(path: Path, command: str) -> None:
    """Put the header line on a result file another command wrote (`eval --markdown`)."""
    body = path.read_text(encoding="utf-8")
    write(path.stem, body, command.split())


if __name__ == "__main__":
    # python bench/results.py FILE.md COMMAND...: head FILE.md with the date, COMMAND and host.
    if len(sys.argv) < 3:
        sys.exit("usage: python bench/results.py FILE.md COMMAND...")
    stamp(Path(sys.argv[1]), " ".join(sys.argv[2:]))
