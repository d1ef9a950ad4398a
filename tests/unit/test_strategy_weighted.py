import numpy as np
import pytest

from stream_dedup.strategies.stats import CorpusStats
from stream_dedup.strategies.weighted import length_weight, weights_003
from stream_dedup.strategies.words import Bag

pytestmark = pytest.mark.unit


def stats_of(words: list[str], df: list[int], docs: int) -> CorpusStats:
    n = len(words)
    return CorpusStats(docs, np.array(words), np.array(df), np.zeros(n), np.zeros(n),
                       np.zeros(0, np.uint64), np.zeros(0), 20)


def test_003_weights_by_hand() -> None:
    # 经济 x2 (noun, in the title), 发展 (verb), 但是 (a marker word); N = 10, n = 1, 10, 5.
    # TF 2/4, 1/4, 1/4; IDF lg(10.01) = 1.000434, lg(1.01) = 0.004321, lg(2.01) = 0.303196;
    # all two characters long: Len = 0.
    # 经济: 0.5 * 1.000434 * (1 + 3 + 0 + 0 + 5) = 4.501953
    # 发展: 0.25 * 0.004321 * (1 + 2)            = 0.003241
    # 但是: 0.25 * 0.303196 * (1 + 1 + 5)        = 0.530593
    bag = Bag.of(["经济", "发展", "经济", "但是"])
    stats = stats_of(["经济", "发展", "但是"], [1, 10, 5], 10)
    got = weights_003(bag, ["n", "v", "c"], frozenset({"经济"}), stats)
    assert got == pytest.approx([4.501953, 0.003241, 0.530593], rel=1e-5)


def test_length_is_scaled_between_the_shortest_and_longest_word() -> None:
    assert length_weight(np.array([1, 2, 4])).tolist() == pytest.approx([0, 1 / 3, 1])
    assert length_weight(np.array([2, 2])).tolist() == [0, 0]


def test_an_unseen_word_counts_as_in_one_document() -> None:
    stats = stats_of(["经济"], [10], 10)
    idf = stats.idf(stats.ids(["没见过"]))
    assert idf.tolist() == pytest.approx([np.log10(10 + 0.01)])
