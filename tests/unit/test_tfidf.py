import numpy as np
import pytest

from stream_dedup.engine.strategies.tfidf import tfc

pytestmark = pytest.mark.unit


def test_tfc_by_hand() -> None:
    # Text "a a b", N = 4, a in 1 document, b in all 4: idf = lg(4.01) = 0.60314, lg(1.01) =
    # 0.00432; tf*idf = 2/3*0.60314 = 0.40210 and 1/3*0.00432 = 0.00144; divided by their norm.
    weights = tfc(np.array([2, 1]), np.log10(np.array([4 / 1 + 0.01, 4 / 4 + 0.01])))
    assert weights == pytest.approx([0.99999358, 0.00358235], rel=1e-6)
    assert float(np.sum(weights**2)) == pytest.approx(1.0)


def test_tfc_of_words_every_document_has_is_zero_not_nan() -> None:
    assert tfc(np.array([1, 1]), np.zeros(2)).tolist() == [0.0, 0.0]
