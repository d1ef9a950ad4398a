"""File mode's edges: read records from a JSONL or text file (optionally gzipped)."""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from .errors import InputError


def open_input(path: str | Path) -> BinaryIO:
    """Open a file for reading bytes; `.gz` is decompressed; '-' is standard input."""
    path = str(path)
    if path == "-":
        import sys

        return sys.stdin.buffer
    try:
        if path.endswith(".gz"):
            return gzip.open(path, "rb")  # type: ignore[return-value]
        return open(path, "rb")
    except OSError as exc:
        raise InputError(path, exc.strerror or "cannot open") from None


def read_lines(path: str | Path) -> Iterator[tuple[int, bytes]]:
    """(line number from 1, raw line without its newline), skipping nothing."""
    stream = open_input(path)
    try:
        for number, line in enumerate(stream, start=1):
            yield number, line.rstrip(b"\r\n")
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise InputError(str(path), f"cannot read: {exc}") from None
    finally:
        if stream is not getattr(__import__("sys").stdin, "buffer", None):
            stream.close()


def input_size(path: str | Path) -> int | None:
    """Bytes on disk (for progress), or None for standard input."""
    try:
        return os.path.getsize(path) if str(path) != "-" else None
    except OSError:
        return None


def count_lines(path: str | Path, most: int | None = None) -> int | None:
    """Lines of a file (a pass over it, decompressed), for a progress bar's time left; with
    `most`, the pass stops once it has found more than that many (the count then says only
    that). None when it cannot be read (the run itself then reports why)."""
    try:
        with open_input(path) as stream:
            count = 0
            last = b"\n"
            while chunk := stream.read(1 << 20):
                count += chunk.count(b"\n")
                last = chunk[-1:]
                if most is not None and count > most:
                    return count
            return count + (last != b"\n")
    except (InputError, OSError, EOFError, gzip.BadGzipFile):
        return None
