"""File mode's edges: read records from a JSONL or text file (optionally gzipped)."""

from __future__ import annotations

import gzip
import os
import sys
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from .errors import InputError

_READ = 1 << 20  # most bytes a read of an input file returns


def open_input(path: str | Path) -> BinaryIO:
    """Open a file for reading bytes; `.gz` is decompressed; '-' is standard input."""
    path = str(path)
    if path == "-":
        return sys.stdin.buffer
    try:
        if path.endswith(".gz"):
            return gzip.open(path, "rb")  # type: ignore[return-value]
        return open(path, "rb")
    except OSError as exc:
        raise InputError(path, exc.strerror or "cannot open") from None


class Lines:
    """A file's lines, numbered from 1, each without its newline and nothing skipped, read once
    in chunks. `ahead` reads the first ones before any is used, to tell whether the whole input
    is short (a run chooses its state by that) without a second pass over the file. A context
    manager; iterating it to the end closes it too."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._stream = open_input(path)
        self._held: deque[bytes] = deque()  # read ahead, not yet split into lines
        self._error: InputError | None = None  # met while reading ahead: raised in its place
        self.total: int | None = None  # the input's lines, when `ahead` read it all

    def __enter__(self) -> Lines:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def ahead(self, most: int, most_bytes: int) -> int | None:
        """Read on until past `most` lines or `most_bytes` bytes, or to the end: the input's
        lines when it has at most `most` (`total` holds them whenever the end came first), else
        None (then too when reading failed: the iteration raises that error after the lines
        before it)."""
        lines = size = 0
        last = b"\n"
        while lines <= most and size <= most_bytes:
            chunk = self._read()
            if not chunk:
                if self._error is not None:
                    return None
                self.total = lines + (last != b"\n")
                return self.total if self.total <= most else None
            self._held.append(chunk)
            lines += chunk.count(b"\n")
            size += len(chunk)
            last = chunk[-1:]
        return None

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        number = 0
        tail: list[bytes] = []  # the start of a line that goes on in a later chunk
        try:
            while chunk := self._held.popleft() if self._held else self._read():
                lines = chunk.split(b"\n")
                if len(lines) == 1:
                    tail.append(chunk)
                    continue
                if tail:
                    lines[0] = b"".join([*tail, lines[0]])
                last = lines.pop()
                tail = [last] if last else []
                for line in lines:
                    number += 1
                    yield number, line.rstrip(b"\r")
            if self._error is not None:
                raise self._error
            if tail:
                yield number + 1, b"".join(tail).rstrip(b"\r")
        finally:
            self.close()

    def _read(self) -> bytes:
        """The next chunk (b"" at the end, or after an error, kept for the iteration): as
        much as one read gives, so lines piped in slowly are not held back."""
        if self._error is not None:
            return b""
        try:
            return self._stream.read1(_READ)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            self._error = InputError(self.path, f"cannot read: {exc}")
            return b""

    def close(self) -> None:
        if self._stream is not getattr(sys.stdin, "buffer", None):
            self._stream.close()


def read_lines(path: str | Path) -> Iterator[tuple[int, bytes]]:
    """(line number from 1, raw line without its newline), skipping nothing."""
    yield from Lines(path)


def input_size(path: str | Path) -> int | None:
    """Bytes on disk (for progress), or None for standard input."""
    try:
        return os.path.getsize(path) if str(path) != "-" else None
    except OSError:
        return None


def count_lines(path: str | Path) -> int | None:
    """Lines of a file (a pass over it, decompressed), for a progress bar's time left; None when
    it cannot be read (the run itself then reports why)."""
    try:
        with open_input(path) as stream:
            count = 0
            last = b"\n"
            while chunk := stream.read(1 << 20):
                count += chunk.count(b"\n")
                last = chunk[-1:]
            return count + (last != b"\n")
    except (InputError, OSError, EOFError, gzip.BadGzipFile):
        return None
