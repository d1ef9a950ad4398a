"""The anchor pairs kernel equals its definition, lookup by lookup."""

from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_dedup.engine.index.pairs import SEQ_BITS, anchor_pairs

pytestmark = pytest.mark.property
FAMILIES = 3
lookup = st.tuples(st.integers(0, 4), st.booleans(), st.integers(0, FAMILIES - 1))  # anchor,
# posted, family


def reference(rows: list[int], lookups: list[tuple[int, bool, int]], stored: list[list[int]],
              seqs: list[int], postings: int, weights: list[int], need: np.ndarray
              ) -> dict[int, tuple[bool, int]]:
    shared: dict[int, list[int]] = defaultdict(lambda: [0] * FAMILIES)
    score: dict[int, int] = defaultdict(int)
    for p, (row, (g, _, f)) in enumerate(zip(rows, lookups, strict=True)):
        earlier = [rows[q] for q in range(p) if lookups[q][0] == g and lookups[q][1]]
        before = len(earlier)
        recent = earlier[-postings:] if postings else earlier
        keep = min(max(postings - before, 0), len(stored[g]))
        seen = stored[g][len(stored[g]) - keep:] + [seqs[r] for r in recent]
        for cand in seen:
            pair = row << SEQ_BITS | cand
            shared[pair][f] += 1
            score[pair] += weights[keep + min(before, postings)]
    return {pair: (any(c >= n for c, n in zip(counts, need[pair >> SEQ_BITS], strict=True)),
                   score[pair]) for pair, counts in shared.items()}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(lookup, max_size=6), min_size=1, max_size=6),
       st.lists(st.lists(st.integers(0, 30), max_size=5), min_size=5, max_size=5),
       st.sampled_from([0, 1, 2, 4]), st.integers(1, 3))
def test_anchor_pairs_equal_their_definition(by_row: list[list[tuple[int, bool, int]]],
                                             stored: list[list[int]], postings: int,
                                             need_all: int) -> None:
    rows = [r for r, lookups in enumerate(by_row) for _ in lookups]
    lookups = [x for row in by_row for x in row]
    seqs = [100 + r for r in range(len(by_row))]
    weights = list(range(1000, 1000 - 7 * (postings + 1), -7))
    need = np.full((len(by_row), FAMILIES), need_all, np.int64)
    need[:, -1] = 1
    groups = np.array([g for g, _, _ in lookups], np.int64)
    pairs, qualifies, score = anchor_pairs(
        groups.argsort(kind="stable"), groups, np.array([p for _, p, _ in lookups], bool),
        np.array(rows, np.int64), np.array(seqs, np.uint64),
        np.array([s for g in stored for s in g], np.uint64),
        np.array([len(g) for g in stored], np.int64), postings,
        np.array([f for _, _, f in lookups], np.int64), np.array(weights, np.int64), need)
    assert pairs.tolist() == sorted(pairs.tolist())
    got = dict(zip(pairs.tolist(), zip(qualifies.tolist(), score.tolist(), strict=True),
                   strict=True))
    assert got == reference(rows, lookups, stored, seqs, postings, weights, need)
