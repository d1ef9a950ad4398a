"""One batch against the index: find every message's candidates, then add the batch to the tables.

Everything is done for the whole batch at once in numpy: one multi-get for all the block tables
and one for the anchors, a ragged gather of the stored entries under each message's keys, one
XOR/popcount over all of them, and candidates from earlier messages of the same batch found by
sorting the batch's own keys (one sort of each kind of key serves its lookup, its in-batch pairs
and its inserts, which are built from the values already read). A message sees exactly what
one-at-a-time processing would: the messages stored before the batch plus the earlier messages of
the batch, and under an anchor the last `postings` of those together (the stored list is cut to
what its in-batch posters leave), so verdicts do not depend on the batch size.

Candidates are (message index, seq) pairs packed as ``index << 40 | seq`` (seqs stay below 2^40,
a trillion messages).
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import length_hint

import numpy as np

from ...state.store import KVStore, WriteSet
from ..bloom import Bloom
from ..fingerprint import mix64, run_starts
from .chunks import CHUNK, Sealed, read_buckets, seal
from .layout import Layout
from .pairs import SEQ_BITS, anchor_pairs
from .tables import ENTRY, anchor_keys, bucket_keys

_SEQ_MASK = np.uint64((1 << SEQ_BITS) - 1)
_U64 = np.uint64
_POSTING = np.dtype("<u8")  # a posting: the seq of a message posted under an anchor


@dataclass(frozen=True, slots=True)
class Candidates:
    """Per message of the batch, its candidates best first: (seq, distance or -1, anchor score).
    Messages without candidates are absent from `by_message`."""

    by_message: dict[int, list[tuple[int, int, int]]]
    considered: int  # (message, candidate) pairs that qualified, before the cut to the best
    compared: int  # bucket entries Hamming-compared


def _ragged(lengths: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each row r, the indices starts[r] .. starts[r] + lengths[r]; returns (row, index)."""
    total = int(lengths.sum())
    rows = np.arange(len(lengths)).repeat(lengths)
    if not total:
        return rows, np.zeros(0, dtype=np.int64)
    first = lengths.cumsum() - lengths
    return rows, np.arange(total) - first[rows] + starts[rows]


def _argsort(values: np.ndarray) -> np.ndarray:
    """Stable argsort of a uint64 array by its 16-bit digits, lowest first (numpy sorts 16-bit
    keys by radix), up to the highest digit any value has: cheaper than numpy's 64-bit sorts on
    a batch's thousands of anchors or candidate pairs."""
    order = values.astype(np.uint16).argsort(kind="stable")
    top = int(values.max()) if len(values) else 0
    for shift in (16, 32, 48):
        if not top >> shift:
            break
        order = order[(values[order] >> _U64(shift)).astype(np.uint16).argsort(kind="stable")]
    return order


def _unique_inverse(values: np.ndarray,
                    order: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(values, return_inverse=True)` of a 1-D array, without np.unique's per-call
    overhead (a small batch's probe makes several calls). `order` is the values' stable argsort
    when the caller has it."""
    if order is None:
        order = values.argsort(kind="stable")
    ranked = values[order]
    starts = run_starts(ranked)
    inverse = np.empty(len(values), dtype=np.int64)
    inverse[order] = starts.cumsum() - 1
    return ranked[starts], inverse


def _unique_counts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(values, return_counts=True)` of a 1-D uint64 array (see `_unique_inverse`)."""
    ranked = values[_argsort(values)]
    starts = run_starts(ranked).nonzero()[0]
    return ranked[starts], np.diff(starts, append=len(ranked))


def _earlier_pairs(groups: np.ndarray, limit: int | None = None,
                   eligible: np.ndarray | None = None, order: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs (later, earlier) of batch positions that share a group, earlier < later, earlier
    among the `eligible` ones (default all); with a limit, only the `limit` most recent earlier
    ones per later position. Also, per position, how many eligible earlier ones it has (before
    the limit). `order` is the groups' stable argsort when the caller has it, so a batch's keys
    are not sorted again for their in-batch pairs and their puts."""
    if eligible is None:
        eligible = np.ones(len(groups), dtype=bool)
    if not len(groups):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    if order is None:
        order = groups.argsort(kind="stable")  # by group, then position
    g, ok = groups[order], eligible[order]
    starts = run_starts(g)
    run_start = starts.nonzero()[0]
    run_of = starts.cumsum() - 1
    # Eligible members, in (group, position) order; each run's ones are a contiguous range.
    members = order[ok]
    ok_before = ok.cumsum() - ok  # eligible elements before each sorted element
    first_member = ok_before[run_start]  # index into `members` where each run's range starts
    earlier_count = ok_before - first_member[run_of]
    take = np.minimum(earlier_count, limit) if limit else earlier_count
    rows, idx = _ragged(take, first_member[run_of] + earlier_count - take)
    before = np.empty(len(groups), dtype=np.int64)
    before[order] = earlier_count
    return order[rows], members[idx], before


def _packed(values: list[bytes | None], dtype: np.dtype, at: np.ndarray | None = None,
            size: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The values in one array, and how many entries each has (none when missing:
    `length_hint` of None is 0, so missing values need no stand-in). With `at`, values[j] is
    that of position at[j] of `size`, the others missing (none was read: most of a batch's)."""
    stored = np.frombuffer(b"".join(filter(None, values)), dtype=dtype)
    counts = np.fromiter(map(length_hint, values), np.int64, count=len(values)) // dtype.itemsize
    if at is None:
        return stored, counts
    lengths = np.zeros(size, dtype=np.int64)
    lengths[at] = counts
    return stored, lengths


def _bucket_hashes(tables: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each bucket (table, key) for the filter of what was written."""
    return mix64((tables.astype(_U64) << _U64(56)) | keys)


@dataclass(frozen=True, slots=True)
class AnchorQuery:
    """The anchors of a batch's rows and how their matches count.

    Row i looks up its `families[i].sum()` anchors of `values` (row by row, listed family by
    family, `families[i]` of each, each family ascending) and is posted under the `posted[i, f]`
    smallest of each family f (None: its `stored` smallest, of one family). A candidate found by
    anchors alone qualifies when it shares `need[i, f]` anchors of some family f; candidates are
    ranked by the sum over shared anchors of `weights[seen]`, seen being how many earlier
    posters the lookup found under the anchor."""

    values: np.ndarray
    families: np.ndarray
    need: np.ndarray
    weights: np.ndarray
    posted: np.ndarray | None = None


class BatchProbe:
    """Probe the block tables and anchor postings for a batch and stage the batch's inserts.

    `written`: a filter of every anchor and bucket the store holds (every one written since the
    index was empty: a bucket by `_bucket_hashes`), which the batch's are added to: what it
    never saw is not looked up (most anchors of a batch have no postings, many buckets of a
    young index no entries, and a lookup that finds nothing costs the store about as much as
    one that finds something)."""

    def __init__(self, store: KVStore, layout: Layout, postings: int, stored: int,
                 written: Bloom | None = None) -> None:
        self._store = store
        self._layout = layout
        self._postings = postings
        self._stored = stored
        self._written = written
        self._puts: list[tuple[str, bytes, bytes]] = []

    def run(self, fps: np.ndarray, seqs: np.ndarray, anchors: AnchorQuery,
            candidate_distance: int, max_candidates: int) -> Candidates:
        """Candidates of every message (row); the batch's own entries are staged for `stage`."""
        n = len(fps)
        if not n:
            return Candidates({}, 0, 0)
        keys_b, dist_b, compared = self._buckets(fps, seqs, candidate_distance)
        keys_a, qualifies_a, score_a = self._anchors(anchors, seqs)
        by_message, considered = self._rank(keys_b, dist_b, keys_a, qualifies_a, score_a,
                                            max_candidates)
        return Candidates(by_message, considered, compared)

    def stage(self, writes: WriteSet) -> None:
        writes.ops.extend(self._puts)
        self._puts.clear()

    # -- block tables ---------------------------------------------------------------------

    def _buckets(self, fps: np.ndarray, seqs: np.ndarray,
                 candidate_distance: int) -> tuple[np.ndarray, np.ndarray, int]:
        """All tables at once: position t * n + i is message i's key in table t, and a bucket
        is a (table, key) group of positions, so one multi-get and one pass serve every table
        (the per-table steps were most of a small batch's fixed cost)."""
        n = len(fps)
        table_keys = self._layout.keys(fps)
        keys, tables = table_keys.ravel(), np.arange(table_keys.size) // n
        # By table, then key, then position: each table's row sorted on its own.
        order = (table_keys.argsort(axis=1, kind="stable")
                 + (np.arange(len(table_keys)) * n)[:, None]).ravel()
        new = run_starts(keys[order], tables[order])
        inverse = np.empty(len(keys), dtype=np.int64)
        inverse[order] = new.cumsum() - 1
        first = order[new]
        names = bucket_keys(tables[first], keys[first])
        if self._written is None:
            values, sealed = read_buckets(self._store, names)
            stored, lengths = _packed(values, ENTRY)
        else:
            hashes = _bucket_hashes(tables[first], keys[first])
            wanted = self._written.contains(hashes).nonzero()[0]
            found, sealed = read_buckets(self._store, [names[i] for i in wanted.tolist()])
            stored, lengths = _packed(found, ENTRY, wanted, len(names))
        starts = lengths.cumsum() - lengths
        rows, idx = _ragged(lengths[inverse], starts[inverse])
        entries = stored[idx]
        later, earlier, _ = _earlier_pairs(inverse, order=order)
        owner = np.concatenate([rows, later]) % n
        cand_fp = np.concatenate([entries["fp"], fps[earlier % n]])
        cand_seq = np.concatenate([entries["seq"], seqs[earlier % n]])
        dist = np.bitwise_count(cand_fp ^ fps[owner])
        close = dist <= candidate_distance
        self._stage_buckets(names, stored, lengths, inverse, order, fps, seqs, sealed)
        if self._written is not None:  # every bucket probed gets the batch's entries
            self._written.add(hashes)
        return ((owner[close].astype(_U64) << _U64(SEQ_BITS)) | cand_seq[close],
                dist[close].astype(np.int64), len(dist))

    def _stage_buckets(self, names: list[bytes], stored: np.ndarray, lengths: np.ndarray,
                       inverse: np.ndarray, order: np.ndarray, fps: np.ndarray,
                       seqs: np.ndarray, sealed: dict[bytes, Sealed]) -> None:
        """The buckets with the batch's entries appended; those past a chunk (or sealed
        already) written as their head and the chunks sealed now (`chunks.seal`)."""
        position = order % len(fps)
        new = np.empty(len(order), dtype=ENTRY)
        new["fp"], new["seq"] = fps[position], seqs[position]
        puts, sizes = self._append("blocks", names, stored, lengths, inverse[order], new, None)
        chunked = (sizes > CHUNK).nonzero()[0].tolist()
        if sealed:
            chunked = sorted({*chunked, *(i for i, (_, name, _) in enumerate(puts)
                                          if name in sealed)})
        for i in reversed(chunked):
            _, name, value = puts[i]
            puts[i : i + 1] = [("blocks", k, v) for k, v in seal(name, value, sealed.get(name))]
        self._puts += puts

    def _append(self, cf: str, names: list[bytes], stored: np.ndarray, lengths: np.ndarray,
                groups: np.ndarray, new: np.ndarray, keep: int | None
                ) -> tuple[list[tuple[str, bytes, bytes]], np.ndarray]:
        """The puts of the stored entries (value u is `lengths[u]` entries of `stored`) + the
        new ones of each group (`groups` sorted, `new` in that order), the last `keep` when
        given, and each put's entries. The values are gathered in one array and cut apart, not
        concatenated (and cut to `keep`) put by put."""
        starts = run_starts(groups).nonzero()[0]
        stops = np.append(starts[1:], len(groups))
        touched = groups[starts]
        old, added = lengths[touched], stops - starts
        if keep:
            added = np.minimum(added, keep)
            old = np.minimum(old, keep - added)
        # A put's value: the last `old` of its stored entries, then the last `added` of its new
        # ones; both are ranges of stored + new.
        firsts = np.column_stack([lengths.cumsum()[touched] - old, len(stored) + stops - added])
        _, idx = _ragged(np.column_stack([old, added]).ravel(), firsts.ravel())
        data = np.concatenate([stored, new])[idx].tobytes()
        bounds = [0, *((old + added).cumsum() * new.itemsize).tolist()]
        return [(cf, names[u], data[start:end]) for u, start, end
                in zip(touched.tolist(), bounds[:-1], bounds[1:], strict=True)], old + added

    # -- anchors --------------------------------------------------------------------------

    def _anchors(self, query: AnchorQuery,
                 seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(pair, whether it qualifies, weighted score) of every (row, earlier message) pair
        sharing an anchor, pairs ascending. A message looks up all its anchors but is posted
        under only some (by default its `stored` smallest: a bottom-k sample, and a copy that
        keeps most of a text keeps some of those)."""
        flat = query.values
        rows, width = query.families.shape
        if not len(flat):
            return np.zeros(0, dtype=_U64), np.zeros(0, bool), np.zeros(0, np.int64)
        owner_of = np.arange(rows).repeat(query.families.sum(axis=1))
        runs = query.families.ravel()  # one run of anchors per (message, family)
        family = np.tile(np.arange(width), rows).repeat(runs)
        rank = np.arange(len(flat)) - (runs.cumsum() - runs).repeat(runs)  # within its run
        if query.posted is not None:
            posted = rank < query.posted.ravel().repeat(runs)
        else:
            posted = rank < self._stored if self._stored else np.ones(len(flat), dtype=bool)
        order = _argsort(flat)
        uniq, inverse = _unique_inverse(flat, order)
        names = anchor_keys(uniq)
        stored, lengths = self._read_postings(uniq, names)
        keys, qualifies, score = anchor_pairs(order, inverse, posted, owner_of, seqs, stored,
                                              lengths, self._postings, family, query.weights,
                                              query.need)
        poster = order[posted[order]]  # by anchor, then position
        self._puts += self._append("anchors", names, stored, lengths, inverse[poster],
                                   seqs[owner_of[poster]], self._postings)[0]
        if self._written is not None:
            self._written.add(flat[poster])
        return keys, qualifies, score

    def _read_postings(self, anchors: np.ndarray, names: list[bytes]
                       ) -> tuple[np.ndarray, np.ndarray]:
        """The stored postings of the anchors, packed (`_packed`): only those `written` may
        hold are read."""
        if self._written is None:
            return _packed(self._store.get_many("anchors", names), _POSTING)
        wanted = self._written.contains(anchors).nonzero()[0]
        found = self._store.get_many("anchors", [names[i] for i in wanted.tolist()])
        return _packed(found, _POSTING, wanted, len(names))

    # -- ranking --------------------------------------------------------------------------

    def _rank(self, keys_b: np.ndarray, dist_b: np.ndarray, keys_a: np.ndarray,
              qualifies_a: np.ndarray, score_a: np.ndarray,
              max_candidates: int) -> tuple[dict[int, list[tuple[int, int, int]]], int]:
        """Bucket entries within the distance qualify; anchor-only ones when `qualifies_a` says
        so. Best first: the highest anchor score, then the nearest."""
        # Anchor pairs (ascending) that neither qualify nor score a bucket entry go first: most
        # of them share an anchor or two, and they would only be sorted to be dropped.
        if len(keys_a):
            at = np.minimum(np.searchsorted(keys_a, keys_b), len(keys_a) - 1)
            wanted = qualifies_a.copy()
            wanted[at[keys_a[at] == keys_b]] = True
            keys_a, qualifies_a, score_a = keys_a[wanted], qualifies_a[wanted], score_a[wanted]
        # The union of both kinds of pair in one stable sort: a pair's bucket entries (several
        # tables may find it, at the same distance) sort before its one anchor entry.
        found = len(keys_b)
        merged = np.concatenate([keys_b, keys_a])
        order = merged.argsort(kind="stable")
        ranked = merged[order]
        starts = run_starts(ranked)
        keys, first = ranked[starts], order[starts]
        dist = np.full(len(keys), -1, dtype=np.int64)
        by_bucket = first < found
        dist[by_bucket] = dist_b[first[by_bucket]]
        qualifies = dist >= 0
        score = np.zeros(len(keys), dtype=np.int64)
        by_anchor = order >= found
        at = (starts.cumsum() - 1)[by_anchor]
        qualifies[at] |= qualifies_a[order[by_anchor] - found]
        score[at] = score_a[order[by_anchor] - found]
        owner = (keys >> _U64(SEQ_BITS)).astype(np.int64)
        keys, dist, score, owner = (keys[qualifies], dist[qualifies], score[qualifies],
                                    owner[qualifies])
        order = np.lexsort((np.where(dist < 0, 255, dist), -score, owner))
        keys, dist, score, owner = keys[order], dist[order], score[order], owner[order]
        starts = run_starts(owner)
        rank = np.arange(len(owner)) - starts.nonzero()[0][starts.cumsum() - 1]
        top = rank < max_candidates
        by_message: dict[int, list[tuple[int, int, int]]] = {}
        for o, k, d, s in zip(owner[top].tolist(), (keys[top] & _SEQ_MASK).tolist(),
                              dist[top].tolist(), score[top].tolist(), strict=True):
            by_message.setdefault(o, []).append((k, d, s))
        return by_message, len(keys)
