import numpy as np
import pytest

from stream_dedup.engine.strategies.esimhash import ESimhash, positioned_hashes
from stream_dedup.engine.strategies.fit import fit
from stream_dedup.engine.strategies.votes import weighted_simhash
from stream_dedup.engine.strategies.words import word_hashes, words

pytestmark = pytest.mark.unit


def test_hash_xor_position() -> None:
    h = word_hashes(["甲", "乙"])
    assert positioned_hashes(["甲", "乙", "甲"]).tolist() == [
        int(h[0]), int(h[1]) ^ 1, int(h[0]) ^ 2]


def test_each_occurrence_weighs_entropy_over_text_length() -> None:
    stats = fit(["苹果香蕉", "苹果西瓜", "西瓜苹果香蕉"], top_m=20)
    text = "苹果香蕉苹果"
    ws = words(text)
    weights = stats.entropy(stats.ids(ws)) / len(ws)  # sums to tf x H per word
    expected = weighted_simhash(positioned_hashes(ws), weights, np.zeros(len(ws), np.int64), 1)
    assert ESimhash(stats)([text])[0].tolist() == expected.tolist()


def test_a_word_added_at_the_head_moves_e_simhash_more_than_one_at_the_tail() -> None:
    stats = fit(["今天北京天气很好我们去公园散步吧", "明天上海可能下雨"], top_m=20)
    base = "今天北京天气很好我们去公园散步吧"
    fps, _ = ESimhash(stats)([base, "唉" + base, base + "唉"])
    head, tail = (int(np.bitwise_count(fps[0] ^ fps[k])) for k in (1, 2))
    assert head >= tail
