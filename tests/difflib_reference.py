"""What the compiled alignment (`engine.align`) must answer: the standard library's matcher on
the part between the two texts' common prefix and suffix, for the unit and property tests."""

from __future__ import annotations

import difflib


def reference(a: str, b: str) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes for a -> b, the common prefix and suffix aligned first."""
    p = _common_prefix(a, b)
    q = _common_prefix(a[p:][::-1], b[p:][::-1])
    x, y = a[p : len(a) - q], b[p : len(b) - q]
    inner = difflib.SequenceMatcher(None, x, y, autojunk=False).get_opcodes()
    ops = [(t, i1 + p, i2 + p, j1 + p, j2 + p) for t, i1, i2, j1, j2 in inner]
    return ([("equal", 0, p, 0, p)] if p else []) + ops + (
        [("equal", len(a) - q, len(a), len(b) - q, len(b))] if q else [])


def _common_prefix(a: str, b: str) -> int:
    return next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                min(len(a), len(b)))
