"""The (row, earlier message) pairs a batch's anchor lookups find, tallied: one kernel (numba).

Each lookup of an anchor by a row sees, as one-at-a-time processing would, the anchor's last
`postings` posters: its earlier posters in this batch (the most recent first to count), then
the newest stored ones that still fit. Every poster seen makes an entry (row, poster's seq)
weighing `weights[seen]`, seen being how many posters the lookup found. The entries are
sorted by pair and tallied: per pair, its shared anchors of each family (whether it qualifies:
`need[row, f]` of some family f) and the sum of their weights. In numpy the same took a ragged
gather per kind of poster, a 2-D count per family and a comparison per family (~1 µs a
message more).
"""

from __future__ import annotations

import numpy as np

from ..jit import compiled

SEQ_BITS = 40  # a pair is packed as row << SEQ_BITS | seq
_U64 = np.uint64


def anchor_pairs(order: np.ndarray, groups: np.ndarray, posted: np.ndarray, rows: np.ndarray,
                 seqs: np.ndarray, stored: np.ndarray, lengths: np.ndarray, postings: int,
                 family: np.ndarray, weights: np.ndarray, need: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pairs ascending, whether each qualifies, its score) of a batch's anchor lookups.

    Lookup p is of anchor `groups[p]` by row `rows[p]` (ascending), in family `family[p]`, and
    posts the row under it where `posted[p]`; `order` sorts the lookups by anchor, then
    position. Anchor g's stored posters are the `lengths[g]` seqs of `stored` after those of
    the anchors before it, oldest first; `seqs[row]` is a row's own seq."""
    owner, cand, kind, weight = _entries(order, groups, posted, rows, seqs, stored, lengths,
                                         postings, family, weights)
    if not len(cand):
        return cand, np.zeros(0, np.bool_), np.zeros(0, np.int64)
    low = cand.min()
    return _tally(owner, cand, _dense_argsort(owner.astype(_U64) * (cand.max() - low + _U64(1))
                                              + (cand - low)), kind, weight, need)


def _dense_argsort(values: np.ndarray) -> np.ndarray:
    """Stable argsort of uint64 values: each value with its position below it, sorted
    (numpy's unstable sort, far faster than its stable one; the positions make it stable);
    values too wide for that, by their 16-bit digits (numpy sorts those by radix)."""
    width = max(len(values) - 1, 1).bit_length()
    if int(values.max()).bit_length() + width <= 64:
        packed = (values << _U64(width)) | np.arange(len(values), dtype=_U64)
        packed.sort()
        return (packed & _U64((1 << width) - 1)).astype(np.int64)
    order = values.astype(np.uint16).argsort(kind="stable")
    for shift in (16, 32, 48):
        order = order[(values[order] >> _U64(shift)).astype(np.uint16).argsort(kind="stable")]
    return order


@compiled
def _entries(order: np.ndarray, groups: np.ndarray, posted: np.ndarray, rows: np.ndarray,
             seqs: np.ndarray, stored: np.ndarray, lengths: np.ndarray, postings: int,
             family: np.ndarray, weights: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(row, poster's seq, family, weight) of every poster every lookup sees."""
    n = len(order)
    ends = np.cumsum(lengths)
    # Each lookup's earlier posters in the batch: members[at[p] - before[p]:at[p]].
    members = np.empty(n, np.int64)
    at = np.empty(n, np.int64)
    before = np.empty(n, np.int64)
    m = 0
    i = 0
    while i < n:
        g = groups[order[i]]
        first = m
        while i < n and groups[order[i]] == g:
            p = order[i]
            before[p] = m - first
            at[p] = m
            if posted[p]:
                members[m] = p
                m += 1
            i += 1
    total = 0
    for p in range(n):
        total += _kept(postings, before[p], lengths[groups[p]]) + _recent(postings, before[p])
    owner = np.empty(total, np.int64)
    cand = np.empty(total, _U64)
    kind = np.empty(total, np.int64)
    weight = np.empty(total, np.int64)
    k = 0
    for p in range(n):
        g = groups[p]
        keep = _kept(postings, before[p], lengths[g])
        recent = _recent(postings, before[p])
        w = weights[keep + min(before[p], postings)]
        for q in range(ends[g] - keep, ends[g]):
            owner[k], cand[k], kind[k], weight[k] = rows[p], stored[q], family[p], w
            k += 1
        for q in range(at[p] - recent, at[p]):
            owner[k], cand[k], kind[k], weight[k] = rows[p], seqs[rows[members[q]]], family[p], w
            k += 1
    return owner, cand, kind, weight


@compiled
def _tally(owner: np.ndarray, cand: np.ndarray, order: np.ndarray, kind: np.ndarray,
           weight: np.ndarray, need: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (owner, cand) pairs in `order` (ascending), packed, and for each whether
    it shares `need[row, f]` anchors of some family f, and the sum of its entries' weights."""
    pairs = np.empty(len(order), _U64)
    qualifies = np.empty(len(order), np.bool_)
    score = np.zeros(len(order), np.int64)
    shared = np.zeros(need.shape[1], np.int64)
    out = 0
    e = 0
    while e < len(order):
        row, seq = owner[order[e]], cand[order[e]]
        shared[:] = 0
        while e < len(order) and owner[order[e]] == row and cand[order[e]] == seq:
            shared[kind[order[e]]] += 1
            score[out] += weight[order[e]]
            e += 1
        pairs[out] = (_U64(row) << _U64(SEQ_BITS)) | seq
        qualifies[out] = False
        for f in range(len(shared)):
            if shared[f] >= need[row, f]:
                qualifies[out] = True
        out += 1
    return pairs[:out], qualifies[:out], score[:out]


@compiled
def _kept(postings: int, before: int, stored: int) -> int:
    """Stored posters a lookup sees: what its earlier posters in the batch leave of `postings`."""
    return min(max(postings - before, 0), stored)


@compiled
def _recent(postings: int, before: int) -> int:
    """Earlier posters in the batch a lookup sees: the most recent `postings` (all with none)."""
    return min(before, postings) if postings else before


def warm_up() -> None:
    """Load (or compile) the kernels now rather than inside the first batch with anchors."""
    one = np.zeros(1, np.int64)
    anchor_pairs(one, one, np.ones(1, np.bool_), one, np.zeros(1, _U64), np.zeros(1, _U64),
                 np.ones(1, np.int64), 1, one, np.ones(2, np.int64), np.ones((1, 1), np.int64))
