import numpy as np
import pytest

from stream_dedup.engine.strategies.fit import fit
from stream_dedup.engine.strategies.psimhash import PSimhash, j_tidf, pbdr, position_slots, sig_fnl
from stream_dedup.engine.strategies.simhash_words import WordSimhash

pytestmark = pytest.mark.unit

# A corpus where 李白, 唐代 and 诗人 nearly always come together (high J), 是 is everywhere, and
# 太阳队 and 雄鹿队 are seen in different numbers of documents (so their weights differ).
CORPUS = [
    "李白是唐代诗人", "李白唐代诗人写诗", "杜甫是唐代诗人", "李白唐代诗人饮酒", "李白唐代诗人",
    "今天是晴天", "他不是学生", "这是一本书", "太阳队赢了", "太阳队输了", "雄鹿队的比赛",
    "总决赛开始了",
]


def distance(a: np.uint64, b: np.uint64) -> int:
    return int(np.bitwise_count(a ^ b))


def test_j_tidf_by_hand() -> None:
    # Ranked weights 0.8, 0.5, 0.2; J(1st,2nd) = 0.5, J(1st,3rd) = 0.1, J(2nd,3rd) = 0.9.
    # 2nd: 0.5 - 0.8*0.5 = 0.1; 3rd: 0.2 - max(0.8*0.1, 0.5*0.9) < 0 -> 0; 1st is never lowered.
    jaccard = np.array([[0, 0.5, 0.1], [0.5, 0, 0.9], [0.1, 0.9, 0]])
    assert j_tidf(np.array([0.8, 0.5, 0.2]), jaccard) == pytest.approx([0.8, 0.1, 0.0])


def test_pbdr_marks_the_slots_of_the_positions() -> None:
    slots = position_slots(np.array([0, 5]))
    row = pbdr(1, np.array([0, 0]), np.array([0, 5]))[0]
    # v has a 1 at each position's slot, mean 2/64: v - mean > 0 exactly there.
    assert set(np.flatnonzero(row > 0).tolist()) == set(slots.tolist())
    assert set(row.tolist()) == {-1.0, 1.0}


def test_sig_fnl_with_mu_one_and_a_half() -> None:
    sig = np.array([1.0, 1.0, -1.0, -1.0])
    prime = np.array([1.0, -1.0, 1.0, -1.0])
    assert sig_fnl(sig, prime, 1.5).tolist() == [1.0, 2.0, -2.0, -1.0]


def test_seed_example_word_order_changes_the_p_simhash() -> None:
    stats = fit(CORPUS, top_m=20)
    texts = ["太阳队总决赛赢了雄鹿队", "雄鹿队总决赛赢了太阳队"]
    plain, _ = WordSimhash()(texts)
    positioned, _ = PSimhash(stats)(texts)
    assert plain[0] == plain[1]
    assert positioned[0] != positioned[1]


def test_seed_example_a_negation_moves_p_simhash_further_than_simhash() -> None:
    stats = fit(CORPUS, top_m=20)
    texts = ["李白是唐代诗人", "李白不是唐代诗人"]
    plain, _ = WordSimhash()(texts)
    positioned, _ = PSimhash(stats)(texts)
    assert distance(*positioned) > distance(*plain)


def test_only_the_top_m_words_count() -> None:
    stats = fit(CORPUS, top_m=20)
    one = PSimhash(stats, top_m=1)
    # With m = 1 only the heaviest word (the rare 杜甫 over 是, 唐代, 诗人) makes the fingerprint.
    assert one(["杜甫是唐代诗人"])[0][0] == one(["杜甫"])[0][0]
