"""Traditional to simplified script (OpenCC), converting only the lines that need it.

OpenCC matches every position of its input against its dictionaries, about 2 µs a message of a
batch, and most lines of a simplified-script feed hold no character it would change. An entry
changes a line only where the line holds its whole key, and changes it only when its key differs
from its first value (the one OpenCC converts to). So each such entry gets one character of its
key, its *witness* (one already chosen for another entry when its key has one, else the first
it changes), and a line holding no witness is left as it is. The other lines are converted
together, joined by newlines as the batch is (no key holds a newline, so each converts as it
would alone).

The witnesses are read from the converter's own dictionaries (OpenCC's `opencc_dict` prints them
as text), so they follow the installed OpenCC; where they cannot be read every line is converted.
Lone surrogates count as witnesses: OpenCC refuses them, and still does.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path

import numpy as np
import numpy.typing as npt
import opencc

from . import user_cache
from .lines import code_points, holding, splice

log = logging.getLogger(__name__)
_CODES = 0x110000
_SURROGATES = slice(0xD800, 0xE000)
_WHAT = "script converter's witnesses"


class Simplifier:
    """`converter.convert` of a batch of newline-joined lines, the same result, converting only
    the lines that hold a witness."""

    def __init__(self, converter: opencc.OpenCC) -> None:
        self._convert: Callable[[str], str] = converter.convert
        self._witness = witnesses(converter.config)

    def __call__(self, text: str) -> str:
        if self._witness is None:
            return self._convert(text)
        codes = code_points(text)
        hits = np.flatnonzero(self._witness.take(codes))
        if not len(hits):
            return text
        starts, ends = holding(codes, hits)
        converted = self._convert("\n".join([text[a:b] for a, b in zip(starts, ends,
                                                                        strict=True)]))
        return splice(text, starts, ends, converted.split("\n"))


@cache
def witnesses(config: str) -> npt.NDArray[np.bool_] | None:
    """Whether each code point is a witness of the OpenCC configuration at `config` (a path);
    None when its dictionaries cannot be read. Derived once a machine and kept in the user cache
    (`user_cache`): reading them runs OpenCC's dictionary tool on each, ~60 ms a process."""
    try:
        dictionaries = _dictionaries(config)
        path = user_cache.path_for("witnesses", [Path(__file__)],
                                   [Path(config), *map(Path, dictionaries)])
        codes = user_cache.read(path, _WHAT)
        if not isinstance(codes, np.ndarray):
            codes = _witness_codes(dictionaries)
            user_cache.write(path, codes, _WHAT)
    except (OSError, ValueError, KeyError, subprocess.SubprocessError) as exc:
        log.info("converting every line to simplified script: %s", exc)
        return None
    table = np.zeros(_CODES, dtype=bool)
    table[codes] = True
    return table


def _witness_codes(dictionaries: list[str]) -> npt.NDArray[np.int64]:
    """The witnesses of the entries of these dictionary files, lone surrogates included."""
    table = np.zeros(_CODES, dtype=bool)
    table[_SURROGATES] = True
    entries = [entry for path in dictionaries for entry in _entries(path)]
    # One-character entries first: a longer key holding one of theirs needs no witness of its own.
    for key, value in sorted(entries, key=lambda entry: len(entry[0])):
        if value == key or any(table[ord(ch)] for ch in key):
            continue
        changed = [a for a, b in zip(key, value, strict=False) if a != b]
        table[ord(changed[0] if changed else key[0])] = True
    return np.flatnonzero(table)


def _dictionaries(config: str) -> list[str]:
    """The dictionary files that convert (normalization and conversion chain) of a config."""
    with open(config, encoding="utf-8") as f:
        spec = json.load(f)
    here = os.path.dirname(config)
    steps = [step["dict"] for step in [*spec.get("normalization", ()), *spec["conversion_chain"]]]
    return [os.path.join(here, d["file"]) for d in _flat(steps)]


def _flat(dicts: list[dict[str, object]]) -> Iterator[dict[str, object]]:
    for d in dicts:
        if d["type"] == "group":
            yield from _flat(d["dicts"])  # type: ignore[arg-type]
        elif d["type"] in ("ocd2", "text"):
            yield d
        else:
            raise ValueError(f"dictionary type {d['type']} is not read")


def _entries(path: str) -> Iterator[tuple[str, str]]:
    """(key, value) of each entry of a dictionary file: its first value, the one OpenCC
    converts to."""
    if path.endswith(".ocd2"):
        text = subprocess.run([_dict_tool(), "-i", path, "-o", "/dev/stdout", "-f", "ocd2",
                               "-t", "text"], capture_output=True, check=True, timeout=60,
                              encoding="utf-8").stdout
    else:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    for line in text.splitlines():
        if line:
            key, values = line.split("\t")
            yield key, values.split(" ")[0]


def _dict_tool() -> str:
    """OpenCC's dictionary tool: the one shipped with the Python package, else on the PATH."""
    bundled = os.path.join(os.path.dirname(opencc.__file__), "clib", "bin", "opencc_dict")
    tool = bundled if os.access(bundled, os.X_OK) else shutil.which("opencc_dict")
    if tool is None:
        raise FileNotFoundError("opencc_dict not found")
    return tool
