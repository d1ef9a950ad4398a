"""The compiled alignment answers difflib's opcodes on the part between the common prefix and
suffix."""

import random

import pytest
from difflib_reference import reference

from stream_dedup.engine.align import opcodes

pytestmark = pytest.mark.unit


def test_random_edits_align_as_difflib() -> None:
    rng = random.Random(4)
    for _ in range(1000):
        alphabet = rng.choice(["ab", "的一是不了", "abcdef0123", "a\ud800b😀"])
        a = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
        b = list(a)
        for _ in range(rng.randint(0, 8)):
            at = rng.randint(0, len(b))
            b[at : at + rng.randint(0, 3)] = rng.choice(alphabet) * rng.randint(0, 3)
        assert opcodes(a, "".join(b)) == reference(a, "".join(b))


@pytest.mark.parametrize(("a", "b"), [
    ("好的亲", "好的呢亲"), ("好的呢亲", "好的亲"), ("今天很好", "明天很好"),
    ("价格100元", "价格两百块"), ("abc", "xyz"), ("", "新"), ("旧", ""), ("同", "同"), ("", ""),
    ("abab", "baba"), ("一二三四五", "五四三二一"),
])
def test_hand_written_pairs_align_as_difflib(a: str, b: str) -> None:
    assert opcodes(a, b) == reference(a, b)
