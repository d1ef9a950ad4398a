"""`verify.similarities` against the plain formulation it replaced: frozensets of character
bigrams (a one-character text its own feature), Jaccard, containment and the length rule, with
the same float arithmetic, so scores are bit-identical."""

from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_dedup.config import VerifySettings
from stream_dedup.engine.verify import similarities

pytestmark = pytest.mark.property
texts = st.lists(st.text(alphabet="今天天气很好不错ab\x00😂", max_size=25) | st.text(max_size=12),
                 min_size=1, max_size=8)
share = st.sampled_from([0.0, 0.5, 0.6, 0.8, 1.0]) | st.floats(0, 1)  # ties with round ones
thresholds = st.builds(VerifySettings, min_jaccard=share, min_containment=share,
                       max_length_ratio=st.sampled_from([1.0, 1.5, 2.0, 3.0]) | st.floats(1, 4))


def reference_bigrams(text: str) -> frozenset[int]:
    if len(text) == 1:
        return frozenset({ord(text)})
    return frozenset((ord(x) << 21) | ord(y) for x, y in pairwise(text))


def reference(a: str, b: str, s: VerifySettings) -> tuple[float, str, float]:
    ga, gb = reference_bigrams(a), reference_bigrams(b)
    if not ga or not gb:
        return 0.0, "", 0.0
    common = len(ga & gb)
    jaccard = common / (len(ga) + len(gb) - common)
    if jaccard >= s.min_jaccard:
        return jaccard, "jaccard", jaccard
    containment = common / min(len(ga), len(gb))
    if containment < s.min_containment:
        return max(jaccard, containment), "", jaccard
    short, long_ = sorted((len(a), len(b)))
    small, large = sorted((len(ga), len(gb)))
    close = long_ <= short * s.max_length_ratio and large <= small * s.max_length_ratio
    return containment, "containment" if close else "contained", jaccard


@settings(max_examples=400, deadline=None)
@given(texts, thresholds, st.data())
def test_batch_equals_frozenset_reference(ts: list[str], s: VerifySettings,
                                          data: st.DataObject) -> None:
    index = st.integers(0, len(ts) - 1)
    pairs = data.draw(st.lists(st.tuples(index, index), max_size=20))
    got = similarities(ts, [i for i, _ in pairs], [j for _, j in pairs], s)
    assert got == [reference(ts[i], ts[j], s) for i, j in pairs]
