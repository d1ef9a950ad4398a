"""The alignment the meaning check classifies: difflib's opcodes for a -> b (`SequenceMatcher`
without junk, `autojunk=False`) computed on the part between the two texts' common prefix and
suffix, compiled.

The matcher is the standard library's algorithm as it stands: the longest matching block of a
range (the earliest in a, then in b, of equally long ones), the ranges on either side of it
matched the same way, adjacent blocks joined. On code points in arrays it costs a fraction of a
compiled `SequenceMatcher`, whose dictionaries and tuples dominate on texts this short; the
meaning check aligns every candidate pair. Short ranges are compared cell by cell; long ones
(texts of thousands of characters) only where a character of one text occurs in the other, as
difflib does, so the cost does not grow with the product of their lengths.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

_TAGS = ("equal", "replace", "delete", "insert")
_EQUAL, _REPLACE, _DELETE, _INSERT = range(4)
_DENSE_CELLS = 10_000  # pairs of ranges up to this (100 by 100 characters) matched cell by cell


def opcodes(a: str, b: str) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes for a -> b, with the common prefix and suffix aligned first so the
    quadratic matcher only sees the part that differs."""
    # one encoding for both texts: one costs about as much as matching a short pair
    # (surrogatepass: a lone surrogate, left by a broken escape in a feed, is a code point too)
    codes = np.frombuffer((a + b).encode("utf-32-le", "surrogatepass"), np.uint32)
    found = _kernel()(codes, len(a))
    return [(_TAGS[tag], i1, i2, j1, j2) for tag, i1, i2, j1, j2 in found.tolist()]


def warm_up() -> None:
    """Load (or compile) the kernel now rather than at the first pair."""
    opcodes("ab", "b")


@cache
def _kernel() -> Callable[..., Any]:
    """`_opcodes` compiled, when first needed: modules that only read the meaning check's
    classes (the inspector's) load no compiler."""
    from .jit import compiled

    return compiled(_opcodes)


def _opcodes(codes: np.ndarray, n: int) -> np.ndarray:
    """(tag, i1, i2, j1, j2) rows, tags numbered as `_TAGS`, for a = codes[:n] -> b = codes[n:]:
    the common prefix and suffix, and between them difflib's `get_matching_blocks` and
    `get_opcodes` (one function: a compiled kernel calls no plain function)."""
    a, b = codes[:n], codes[n:]
    m = len(b)
    p = 0
    while p < n and p < m and a[p] == b[p]:
        p += 1
    q = 0
    while q < n - p and q < m - p and a[n - 1 - q] == b[m - 1 - q]:
        q += 1
    # Blocks are disjoint and at least a character long: at most as many as the shorter range
    # has characters, and as many ranges waiting to be matched, plus one.
    most = min(n, m) - p - q + 1
    found = np.empty((most, 3), np.int64)  # (i, j, size) of each matching block
    blocks = 0
    queue = np.empty((most, 4), np.int64)  # ranges (alo, ahi, blo, bhi) to match
    queue[0] = (p, n - q, p, m - q)
    waiting = 1
    # A long range is matched by difflib's b2j: b's positions by character (j ascending among
    # equal ones), and where each character of a finds its own among them; a short one cell by
    # cell, cheaper than building these.
    dense = (n - p - q) * (m - p - q) <= _DENSE_CELLS
    if dense:
        pos = first = last = np.empty(0, np.int64)
    else:
        pos = np.argsort(b[p : m - q], kind="mergesort") + p
        first = np.searchsorted(b[pos], a[p : n - q])
        last = np.searchsorted(b[pos], a[p : n - q], side="right")
    # run[j + 1]: the length of the match ending at a[i - 1], b[j] (difflib's j2len), 0 where
    # none ends; `new` the row being made. Only the places `ends` lists are set, cleared again
    # once the row is read.
    run = np.zeros(m + 1, np.int64)
    new = np.zeros(m + 1, np.int64)
    ends = np.empty(m + 1, np.int64)
    new_ends = np.empty(m + 1, np.int64)
    while waiting:
        waiting -= 1
        alo, ahi, blo, bhi = queue[waiting]
        # difflib's `find_longest_match`: the first longest block found scanning a, then b, in
        # order; without junk it cannot grow at either end, so the extension steps leave it
        best_i, best_j, best = alo, blo, 0
        count = 0
        for i in range(alo, ahi):
            new_count = 0
            for at in range(blo, bhi) if dense else range(first[i - p], last[i - p]):
                j = at if dense else pos[at]
                if j < blo or a[i] != b[j]:
                    continue
                if j >= bhi:
                    break
                k = run[j] + 1
                new[j + 1] = k
                new_ends[new_count] = j + 1
                new_count += 1
                if k > best:
                    best_i, best_j, best = i - k + 1, j - k + 1, k
            for c in range(count):
                run[ends[c]] = 0
            run, new, ends, new_ends, count = new, run, new_ends, ends, new_count
        for c in range(count):
            run[ends[c]] = 0
        if best:
            found[blocks] = (best_i, best_j, best)
            blocks += 1
            if alo < best_i and blo < best_j:
                queue[waiting] = (alo, best_i, blo, best_j)
                waiting += 1
            if best_i + best < ahi and best_j + best < bhi:
                queue[waiting] = (best_i + best, ahi, best_j + best, bhi)
                waiting += 1
    # Blocks in order (disjoint in a: by where they start there), adjacent ones joined, and
    # the empty block at the end of the range last: difflib's `get_matching_blocks`.
    order = np.argsort(found[:blocks, 0])
    out = np.empty((2 * blocks + 3, 5), np.int64)
    rows = 0
    if p:
        out[rows] = (_EQUAL, 0, p, 0, p)
        rows += 1
    i, j = p, p  # where the text not yet answered for starts
    at = 0
    while at <= blocks:
        if at < blocks:
            ai, bj, size = found[order[at]]
            at += 1
            while at < blocks and found[order[at], 0] == ai + size and (
                    found[order[at], 1] == bj + size):
                size += found[order[at], 2]
                at += 1
        else:
            ai, bj, size = n - q, m - q, 0
            at += 1
        # difflib's `get_opcodes`: what lies before the block, then the block
        tag = _REPLACE if i < ai and j < bj else _DELETE if i < ai else _INSERT if j < bj else -1
        if tag >= 0:
            out[rows] = (tag, i, ai, j, bj)
            rows += 1
        i, j = ai + size, bj + size
        if size:
            out[rows] = (_EQUAL, ai, i, bj, j)
            rows += 1
    if q:
        out[rows] = (_EQUAL, n - q, n, m - q, m)
        rows += 1
    return out[:rows]
