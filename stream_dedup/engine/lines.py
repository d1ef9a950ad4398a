"""Steps that change only some lines of a batch's newline-joined texts (`normalize`): where those
lines are, and the batch with them replaced. The other lines are neither copied apart nor
joined again."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def code_points(text: str) -> np.ndarray:
    """The code points of `text` (lone surrogates too) as a uint32 array."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def holding(codes: np.ndarray, positions: Sequence[int] | np.ndarray) -> tuple[list[int],
                                                                              list[int]]:
    """(starts, ends) of the distinct lines holding the code points at `positions`, in line
    order, of a text whose code points are `codes`."""
    bounds = np.concatenate(([-1], np.flatnonzero(codes == 10), [len(codes)]))
    chosen = np.unique(np.searchsorted(bounds, positions))
    return (bounds[chosen - 1] + 1).tolist(), bounds[chosen].tolist()


def splice(text: str, starts: list[int], ends: list[int], lines: Sequence[str]) -> str:
    """`text` with text[starts[i]:ends[i]] replaced by lines[i] (spans ascending, apart)."""
    pieces, done = [], 0
    for start, end, line in zip(starts, ends, lines, strict=True):
        pieces += (text[done:start], line)
        done = end
    pieces.append(text[done:])
    return "".join(pieces)
