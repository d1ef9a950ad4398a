import numpy as np
import pytest

from stream_dedup.engine.fingerprint import (
    Batch,
    _window_minima,
    anchor_runs,
    anchors,
    joined_runs,
    mix64,
    mixed_runs,
    ngram_hashes,
    run_starts,
    runs,
    simhash,
)

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


def _reference_simhash(texts: list[str]) -> list[int]:
    """Simhash by its definition, one text and one bit at a time."""
    out = []
    for text in texts:
        hashes = ngram_hashes(Batch.of([text]), 1)[0].tolist()
        votes = [sum(1 if h >> bit & 1 else -1 for h in hashes) for bit in range(64)]
        out.append(sum(1 << bit for bit in range(64) if votes[bit] > 0))
    return out


def test_simhash_matches_its_definition() -> None:
    rng = np.random.default_rng(5)
    texts = ["", "a", "今天天气很好", *("".join(rng.choice(list("的一是不了在人有我他"), n))
                                      for n in (2, 7, 40, 300))]
    assert simhash(Batch.of(texts)).tolist() == _reference_simhash(texts)


def test_a_batch_over_many_chunks_is_each_text_alone() -> None:
    # ~60k code points: a batch goes in chunks of ~16k, whole texts each; one text is longer.
    rng = np.random.default_rng(9)
    texts = ["".join(rng.choice(list("的一是不了在人有我他"), n)) for n in rng.integers(0, 400, 200)]
    texts.insert(100, "".join(rng.choice(list("的一是不了在人有我他"), 20_000)))
    batch = Batch.of(texts)
    assert simhash(batch, 2).tolist() == [int(simhash(Batch.of([t]), 2)[0]) for t in texts]
    assert [a.tolist() for a in anchors(batch, 4, 8)] == [
        anchors(Batch.of([t]), 4, 8)[0].tolist() for t in texts]
    hashes, owners = ngram_hashes(batch, 3)
    alone = [ngram_hashes(Batch.of([t]), 3)[0] for t in texts]
    assert hashes.tolist() == np.concatenate(alone).tolist()
    assert owners.tolist() == np.repeat(np.arange(len(texts)), [len(a) for a in alone]).tolist()


def test_simhash_lanes_do_not_overflow() -> None:
    # One repeated character: every feature votes alike, so the Simhash is that character's
    # hash. Counts of 255/256 and 65535/65536 features sit at the edges of the lane widths.
    one = int(ngram_hashes(Batch.of(["的"]), 1)[0][0])
    for n in (255, 256, 65_535, 65_536):
        assert simhash(Batch.of(["的" * n, "是"]))[0] == one


def _reference_anchors(text: str, n: int, window: int) -> list[int]:
    """Winnowing by its definition: the distinct minima of every window, ascending."""
    hashes = ngram_hashes(Batch.of([text]), n)[0].tolist()
    if not hashes:
        return []
    span = min(window, len(hashes))
    return sorted({min(hashes[i : i + span]) for i in range(len(hashes) - span + 1)})


def test_anchors_match_their_definition() -> None:
    rng = np.random.default_rng(9)
    texts = ["", "a", "今天天气很好", *("".join(rng.choice(list("的一是不了在人有我他"), k))
                                      for k in (3, 4, 10, 11, 12, 60, 200))]
    got = [a.tolist() for a in anchors(Batch.of(texts), 4, 8)]
    assert got == [_reference_anchors(t, 4, 8) for t in texts]


def test_window_minima_match_a_sliding_window() -> None:
    values = np.random.default_rng(2).integers(0, 2**63, 50).astype(np.uint64)
    for window in (1, 2, 3, 5, 8, 9, 50):
        expected = [values[i : i + window].min() for i in range(len(values) - window + 1)]
        spare, other = np.empty_like(values), np.empty_like(values)
        assert _window_minima(values, window, spare, other).tolist() == expected


def test_run_starts_marks_where_any_column_changes() -> None:
    a, b = np.array([1, 1, 1, 2, 2]), np.array([0, 0, 1, 1, 1])
    assert run_starts(a).tolist() == [True, False, False, True, False]
    assert run_starts(a, b).tolist() == [True, False, True, True, False]
    assert run_starts(np.zeros(0)).tolist() == []


def test_mixed_runs_are_each_run_mixed_sorted_and_cut() -> None:
    texts = ["今天天气很好", "", "a", "明天会下雨吗我不知道", "好好"]
    values, ends = anchor_runs(Batch.of(texts), 2, 1)
    assert len(values) == ends[-1]
    keep = np.array([3, 5, 5, 100, 1], np.int64)
    domain = np.uint64(0x1234)
    mixed, cut = mixed_runs(values, ends, domain, keep)
    expected = [np.sort(mix64(run ^ domain))[:k] for run, k in zip(runs(values, ends), keep,
                                                                     strict=True)]
    assert [r.tolist() for r in runs(mixed, cut)] == [r.tolist() for r in expected]


def test_joined_runs_put_each_texts_runs_together() -> None:
    a = (np.arange(5, dtype=np.uint64), np.array([0, 2, 2, 5]))
    b = (np.arange(10, 13, dtype=np.uint64), np.array([0, 1, 3, 3]))
    values, ends = joined_runs((a, b))
    assert len(values) == ends[-1] == 8
    assert [r.tolist() for r in runs(values, ends)] == [[0, 1, 10], [11, 12], [2, 3, 4]]
