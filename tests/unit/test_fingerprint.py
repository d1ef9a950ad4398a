import numpy as np
import pytest

from stream_dedup.fingerprint import Batch, anchors, ngram_hashes, simhash

pytestmark = pytest.mark.unit


def test_simhash_does_not_depend_on_batch_neighbours() -> None:
    texts = ["今天天气很好", "", "a", "明天会下雨吗我不知道"]
    together = simhash(Batch.of(texts))
    alone = [simhash(Batch.of([t]))[0] for t in texts]
    assert together.tolist() == [int(x) for x in alone]
    assert together[1] == 0


def test_similar_texts_are_closer_than_different_ones() -> None:
    a, b, c = simhash(Batch.of(["酒店服务很好房间干净早餐丰富", "酒店服务很好房间干净早餐丰盛",
                                "这本书内容空洞不值得购买"]))
    assert np.bitwise_count(a ^ b) < np.bitwise_count(a ^ c)


def test_ngram_hashes_stay_inside_each_text() -> None:
    _hashes, owners = ngram_hashes(Batch.of(["abcd", "ef", "g"]), 3)
    assert owners.tolist() == [0, 0, 1, 2]  # 2 grams of "abcd"; the short ones whole


def test_shared_run_gives_shared_anchor() -> None:
    shared = "这是一段足够长的共同文字内容"
    a, b = anchors(Batch.of(["开头不同" + shared, shared + "结尾也不同啊"]), 4, 8)
    assert set(a.tolist()) & set(b.tolist())


def test_anchors_do_not_depend_on_batch_neighbours() -> None:
    texts = ["abcdefghijklmnopqrstu", "", "ab", "你好世界你好世界你好世界", "abcdefghij", "abcdefg"]
    together = [a.tolist() for a in anchors(Batch.of(texts), 4, 8)]
    assert together == [anchors(Batch.of([t]), 4, 8)[0].tolist() for t in texts]
    assert together[1] == [] and anchors(Batch.of([]), 4, 8) == []
