"""What a text is looked up and posted under: posted anchors are looked up too, a text's keys do
not depend on its batch, and two very short texts one edit apart share a posted key."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_dedup.config import Settings
from stream_dedup.engine.features import FAMILIES, Features, features
from stream_dedup.engine.strategies import make_strategy

pytestmark = pytest.mark.property
SETTINGS = Settings()
STRATEGY = make_strategy(SETTINGS.fingerprint)
# Few characters, so texts repeat runs and bigrams; lengths across every family's bounds.
TEXT = st.text(alphabet="好评物流快质量不错谢谢亲的了", min_size=1, max_size=45)


def keys(texts: list[str], salts: list[int] | None = None) -> Features:
    salt = np.array(salts or [0] * len(texts), np.uint64)
    return features(texts, salt, STRATEGY, SETTINGS.fingerprint, SETTINGS.index)


@settings(max_examples=150, deadline=None)
@given(texts=st.lists(TEXT, min_size=1, max_size=6), salt=st.integers(0, 2**64 - 1))
def test_posted_anchors_are_looked_up_too(texts: list[str], salt: int) -> None:
    f = keys(texts, [salt] * len(texts))
    assert f.families.shape == f.posted.shape == (len(texts), FAMILIES)
    assert (f.posted <= f.families).all()
    assert len(f.values) == f.families.sum()
    for i in range(len(texts)):
        assert len(f.anchors[i]) == f.families[i].sum()
        posted = f.posted_anchors(i)
        assert len(posted) == f.posted[i].sum()
        assert set(posted.tolist()) <= set(f.anchors[i].tolist())


@settings(max_examples=100, deadline=None)
@given(texts=st.lists(TEXT, min_size=2, max_size=6))
def test_a_texts_keys_do_not_depend_on_its_batch(texts: list[str]) -> None:
    together = keys(texts)
    for i, text in enumerate(texts):
        alone = keys([text])
        assert alone.anchors[0].tolist() == together.anchors[i].tolist()
        assert alone.posted_anchors(0).tolist() == together.posted_anchors(i).tolist()
        assert alone.fps.tolist() == together.fps[together.owner == i].tolist()


@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet="好评物流快质量不错谢谢亲", min_size=3,
                    max_size=SETTINGS.index.very_short_chars + 1), data=st.data())
def test_very_short_texts_one_deletion_apart_share_a_posted_key(text: str,
                                                                 data: st.DataObject) -> None:
    at = data.draw(st.integers(0, len(text) - 1))
    f = keys([text, text[:at] + text[at + 1:]])
    assert set(f.posted_anchors(0).tolist()) & set(f.posted_anchors(1).tolist())
