import numpy as np
import pytest

from stream_dedup.config import InputSettings
from stream_dedup.decode import decode
from stream_dedup.engine.normalize import PARAGRAPH_BREAK
from stream_dedup.engine.strategies.stats import CorpusStats
from stream_dedup.engine.strategies.weighted import WeightedSimhash, length_weight, weights_003
from stream_dedup.engine.strategies.words import Bag, word_hashes

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


def test_a_records_title_becomes_its_first_line() -> None:
    settings = InputSettings(title_field="meta.title")
    out = decode('{"text": "正文", "meta": {"title": "标题"}}'.encode(), "s", "f", 0, settings)
    assert getattr(out, "text", None) == "标题\n正文"
    plain = decode('{"text": "正文"}'.encode(), "s", "f", 0, settings)
    assert getattr(plain, "text", None) == "正文"


def test_title_words_weigh_more_with_the_title_on() -> None:
    # 发展 (verb, POS 2) and 经济 (noun, POS 3) both twice, same IDF. Without a title 经济 weighs
    # more (1+3 > 1+2) and every bit is its hash's; in the title 发展 gains 5 (1+2+5 > 1+3).
    text = "发展" + PARAGRAPH_BREAK + "经济经济发展"
    stats = stats_of(["经济", "发展"], [1, 1], 10)
    hashes = word_hashes(["经济", "发展"]).tolist()
    assert WeightedSimhash(stats, title=False)([text])[0].tolist() == [hashes[0]]
    assert WeightedSimhash(stats, title=True)([text])[0].tolist() == [hashes[1]]
