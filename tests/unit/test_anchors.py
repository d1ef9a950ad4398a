import sys
from collections.abc import Callable

import pytest

from stream_dedup.errors import StreamDedupError
from stream_dedup.records import Message
from stream_dedup.tools.eval.anchors import MinHashLSHDetector, SimhashPackageDetector
from stream_dedup.tools.eval.detector import Detector, StageTimed

pytestmark = pytest.mark.unit

ORIGINAL = "这家酒店的服务态度非常好，房间干净整洁，早餐品种丰富，下次出差还会选择这里入住。"
UNRELATED = "新款笔记本电脑的电池续航只有三个小时，键盘手感一般，屏幕倒是很清晰。"


def _messages(*texts: str) -> list[Message]:
    return [Message(f"m{i}", text, i * 10) for i, text in enumerate(texts)]


ANCHORS: list[Callable[[], Detector]] = [
    lambda: MinHashLSHDetector(0.4),
    lambda: MinHashLSHDetector(0.5),
    lambda: MinHashLSHDetector(0.4, bulk=True),
    lambda: MinHashLSHDetector(0.4, bulk=True, fast_hash=True),
    SimhashPackageDetector,
]


@pytest.mark.parametrize("make", ANCHORS)
def test_flags_an_exact_repeat_and_not_an_unrelated_text(make: Callable[[], Detector]) -> None:
    detector = make()
    assert detector.flags(_messages(ORIGINAL, UNRELATED, ORIGINAL)) == [False, False, True]


@pytest.mark.parametrize("make", ANCHORS)
def test_state_carries_across_batches(make: Callable[[], Detector]) -> None:
    detector = make()
    assert detector.flags(_messages(ORIGINAL)) == [False]
    assert detector.flags(_messages(UNRELATED, ORIGINAL)) == [False, True]


def test_minhash_sees_through_punctuation_and_width() -> None:
    detector = MinHashLSHDetector(0.5)
    retyped = ORIGINAL.replace("，", ",").replace("。", "!!") + "ＯＫ"
    assert detector.flags(_messages(ORIGINAL, retyped)) == [False, True]


def test_names_and_no_stage_timings() -> None:
    assert MinHashLSHDetector(0.4).name == "datasketch-0.4"
    assert MinHashLSHDetector(0.5).name == "datasketch-0.5"
    assert MinHashLSHDetector(0.4, bulk=True).name == "datasketch-0.4-bulk"
    assert MinHashLSHDetector(0.4, bulk=True, fast_hash=True).name == "datasketch-0.4-bulk-xxh32"
    assert SimhashPackageDetector().name == "simhash-pkg"
    assert not isinstance(MinHashLSHDetector(0.4), StageTimed)


def test_missing_library_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "datasketch", None)  # makes the import fail
    with pytest.raises(StreamDedupError, match=r"'datasketch'.*pip install -e '\.\[dev\]'"):
        MinHashLSHDetector(0.4)


def test_per_message_and_bulk_build_the_same_minhashes() -> None:
    """The two rows differ in speed only: the same signatures, so the same flags."""
    import numpy as np

    from stream_dedup.tools.eval.anchors import _char_ngrams

    grams = [_char_ngrams(text) for text in (ORIGINAL, UNRELATED, ORIGINAL[:20], "好")]
    per_message = MinHashLSHDetector(0.4)
    bulk = MinHashLSHDetector(0.4, bulk=True)
    built = list(bulk._minhash.generator(grams, num_perm=128))
    for one, many in zip(map(per_message._one, grams), built, strict=True):
        assert np.array_equal(one.hashvalues, many.hashvalues)
