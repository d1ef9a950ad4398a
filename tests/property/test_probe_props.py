"""The vectorized in-batch pairing equals the obvious quadratic definition."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_dedup.engine.index.probe import _earlier_pairs

pytestmark = pytest.mark.property


def reference(groups: list[int], limit: int | None, eligible: list[bool]) -> set[tuple[int, int]]:
    pairs = set()
    for i, g in enumerate(groups):
        prior = [j for j in range(i) if groups[j] == g and eligible[j]]
        if limit:
            prior = prior[-limit:]
        pairs |= {(i, j) for j in prior}
    return pairs


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 6), st.booleans()), max_size=40),
    st.sampled_from([None, 1, 2, 5]),
)
def test_earlier_pairs(items: list[tuple[int, bool]], limit: int | None) -> None:
    groups = [g for g, _ in items]
    eligible = [e for _, e in items]
    later, earlier, before = _earlier_pairs(np.array(groups, dtype=np.int64), limit,
                                            np.array(eligible, dtype=bool))
    got = list(zip(later.tolist(), earlier.tolist(), strict=True))
    assert len(got) == len(set(got))
    assert set(got) == reference(groups, limit, eligible)
    assert before.tolist() == [len(reference(groups[: i + 1], None, eligible) - reference(
        groups[:i], None, eligible)) for i in range(len(groups))]
