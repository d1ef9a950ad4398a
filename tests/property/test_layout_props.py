"""Any pair within distance k shares a bucket, for every supported layout, and for every layout
the capacity sizing picks."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_dedup.engine.index.layout import Layout, make_layout

pytestmark = pytest.mark.property

LAYOUTS = [("blocks", k, 0) for k in range(0, 8)] + [
    ("permuted", k, r) for k in range(1, 7) for r in range(k + 2, min(k + 5, 12))
]
# Every layout `auto` picks for k up to 8 and capacities up to 10^10.
SIZED = sorted({(k, Layout.sized(k, 10**e).blocks_count)
                for k in range(0, 9) for e in range(3, 11)})


@st.composite
def pair_within(draw: st.DrawFn, k: int) -> tuple[int, int]:
    a = draw(st.integers(0, 2**64 - 1))
    flips = draw(st.sets(st.integers(0, 63), max_size=k))
    b = a
    for bit in flips:
        b ^= 1 << bit
    return a, b


@pytest.mark.parametrize(("kind", "k", "r"), LAYOUTS)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_pairs_within_k_share_a_bucket(kind: str, k: int, r: int, data: st.DataObject) -> None:
    layout = make_layout(kind, k, r)
    a, b = data.draw(pair_within(k))
    keys = layout.keys(np.array([a, b], dtype=np.uint64))
    assert (keys[:, 0] == keys[:, 1]).any()


@pytest.mark.parametrize(("k", "r"), SIZED)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_sized_layouts_find_pairs_within_k(k: int, r: int, data: st.DataObject) -> None:
    layout = Layout.permuted(k, r)
    a, b = data.draw(pair_within(k))
    keys = layout.keys(np.array([a, b], dtype=np.uint64))
    assert (keys[:, 0] == keys[:, 1]).any()
