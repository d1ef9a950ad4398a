import numpy as np
import pytest

from stream_dedup.engine.fingerprint import mix64
from stream_dedup.engine.strategies.shingle import ShingleSimhash
from stream_dedup.engine.strategies.simhash_words import WordSimhash
from stream_dedup.engine.strategies.words import word_hashes, words

pytestmark = pytest.mark.unit


def reference_simhash(features: list[int], weights: list[float]) -> int:
    """Seed 002 bit by bit: Q_i += w where bit i is 1, else -= w; bit i = Q_i > 0."""
    fp = 0
    for i in range(64):
        q = sum(w if h >> i & 1 else -w for h, w in zip(features, weights, strict=True))
        fp |= (q > 0) << i
    return fp


def test_seed_example_word_order_is_invisible_to_simhash() -> None:
    fps, owner = WordSimhash()(["太阳队总决赛赢了雄鹿队", "雄鹿队总决赛赢了太阳队"])
    assert fps[0] == fps[1] and owner.tolist() == [0, 1]


def test_term_frequency_weights_match_the_bit_loop() -> None:
    text = "我爱北京我爱天安门"
    ws = words(text)
    distinct = list(dict.fromkeys(ws))
    hashes = [int(h) for h in word_hashes(distinct)]
    expected = reference_simhash(hashes, [ws.count(w) for w in distinct])
    assert int(WordSimhash()([text])[0][0]) == expected


def test_shingles_of_w_words_each_weigh_one() -> None:
    text = "今天北京天气很好"
    ws = words(text)
    h = [int(x) for x in word_hashes(ws)]
    def chain(parts: list[int]) -> int:
        acc = np.uint64(0)
        for part in parts:
            acc = mix64(np.array([acc ^ np.uint64(part)]))[0]
        return int(acc)

    shingles = [chain(h[k : k + 2]) for k in range(len(h) - 1)]
    assert int(ShingleSimhash(2)([text])[0][0]) == reference_simhash(shingles, [1] * len(shingles))


def test_a_text_shorter_than_a_shingle_is_one_shingle() -> None:
    fps, _ = ShingleSimhash(5)(["北京", "", "北京"])
    assert fps[0] == fps[2] != 0 and fps[1] == 0
