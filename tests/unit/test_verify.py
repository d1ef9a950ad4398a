"""`verify.similarities`, the batch form the engine measures its candidates with: the same
(score, how, Jaccard) as `verify.similarity` pair by pair, and the rules on texts worked by
hand."""

import random

import pytest

from stream_dedup.config import VerifySettings
from stream_dedup.engine.verify import similarities, similarity

pytestmark = pytest.mark.unit
VS = VerifySettings()
TEXT = "今天天气很好我们去公园"  # eleven characters, ten distinct bigrams


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("", "", (0.0, "", 0.0)),  # an empty text matches nothing
        ("", TEXT, (0.0, "", 0.0)),
        ("好", "好", (1.0, "jaccard", 1.0)),  # a one-character text is its own feature
        ("好", "好人", (0.0, "", 0.0)),  # ... and no bigram
        (TEXT, TEXT, (1.0, "jaccard", 1.0)),
        ("今天天气", "明日下雨", (0.0, "", 0.0)),  # disjoint
        ("今天天气很好", "今天天气不好", (3 / 5, "", 3 / 7)),  # 3 of 5 shared: below both measures
        ("abab", "ab", (1.0, "containment", 1 / 2)),  # a repeated bigram counts once
        (TEXT, TEXT + "abcdefg", (1.0, "containment", 10 / 17)),  # 18 <= 2 * 11 chars
        (TEXT, TEXT + "abcdefghijklmnopqrst", (1.0, "contained", 10 / 30)),  # 31 > 2 * 11 chars
        (TEXT + "abcdefghijklmnopqrst", TEXT, (1.0, "contained", 10 / 30)),  # symmetric
    ],
)
def test_rules_on_worked_pairs(a: str, b: str, expected: tuple[float, str, float]) -> None:
    assert similarity(a, b, VS) == expected
    assert similarities([a, b], [0, 1], [1, 0], VS) == [expected, expected]


def test_a_batch_equals_its_pairs_one_at_a_time() -> None:
    rng = random.Random(5)
    alphabet = "今天天气很好不错的我们ab1😂"  # few characters: pairs share bigrams
    texts = ["", "a", "好", "今天天气很好", "今天天气很好", "明日下雨"]
    texts += ["".join(rng.choices(alphabet, k=rng.randrange(30))) for _ in range(300)]
    first = [rng.randrange(len(texts)) for _ in range(3000)]
    second = [rng.randrange(len(texts)) for _ in range(3000)]
    settings = VerifySettings(min_jaccard=0.3, min_containment=0.5)  # all three kinds occur
    batch = similarities(texts, first, second, settings)
    assert batch == [similarity(texts[i], texts[j], settings)
                     for i, j in zip(first, second, strict=True)]
    assert {how for _, how, _ in batch} == {"", "jaccard", "containment", "contained"}


def test_no_pairs() -> None:
    assert similarities([], [], [], VS) == []
    assert similarities(["今天"], [], [], VS) == []


def test_kernels_compile_where_numba_cannot_cache() -> None:
    from numba import njit

    from stream_dedup.engine.jit import compiled

    namespace: dict = {}
    exec("def twice(x):\n    return 2 * x\n", namespace)  # no source file: nowhere to cache
    with pytest.raises(RuntimeError, match="cannot cache"):
        njit(cache=True)(namespace["twice"])
    assert compiled(namespace["twice"])(21) == 42
