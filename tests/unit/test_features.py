"""What a text is looked up and posted under, by its length: winnowing anchors (the smallest
posted), bigram anchors for short texts (posted by the short ones only), one-deletion keys for
very short texts (all posted), each message's keys salted with its scope's salt."""

import numpy as np
import pytest

from stream_dedup.config import IndexSettings, Settings
from stream_dedup.engine.features import BIGRAM, DELETION, WINNOWED, Features, features
from stream_dedup.engine.strategies import make_strategy

pytestmark = pytest.mark.unit
SETTINGS = Settings()
INDEX = SETTINGS.index
STRATEGY = make_strategy(SETTINGS.fingerprint)
# Distinct characters: every bigram and every one-deletion variant of a prefix is distinct.
DISTINCT = "物流很快包装也好谢亲的了这家店真不错呀还会再来我们下次一定买它吗春夏秋冬东南西北中天地人和山水"


def keys(texts: list[str], salts: list[int] | None = None,
         index: IndexSettings = INDEX) -> Features:
    salt = np.array(salts or [0] * len(texts), np.uint64)
    return features(texts, salt, STRATEGY, SETTINGS.fingerprint, index)


def expected_families(n: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """(looked up, posted) of bigram anchors and of one-deletion keys of a text of n distinct
    characters."""
    stored = INDEX.anchors_stored
    if n <= INDEX.short_chars:
        bigrams = (n - 1, min(n - 1, stored))
    elif n <= INDEX.short_chars * 3 // 2:
        bigrams = (min(n - 1, 2 * stored), 0)
    else:
        bigrams = (0, 0)
    deletions = (n + 1, n + 1) if n <= INDEX.very_short_chars + 1 else (0, 0)
    return bigrams, deletions


@pytest.mark.parametrize("n", [2, 5, INDEX.very_short_chars + 1, INDEX.very_short_chars + 2,
                               INDEX.short_chars, INDEX.short_chars + 1,
                               INDEX.short_chars * 3 // 2, INDEX.short_chars * 3 // 2 + 1])
def test_families_by_length(n: int) -> None:
    assert len(DISTINCT) >= n
    f = keys([DISTINCT[:n]])
    (bigrams, posted_bigrams), (deletions, posted_deletions) = expected_families(n)
    assert (f.families[0, BIGRAM], f.posted[0, BIGRAM]) == (bigrams, posted_bigrams)
    assert (f.families[0, DELETION], f.posted[0, DELETION]) == (deletions, posted_deletions)
    assert f.posted[0, WINNOWED] == min(f.families[0, WINNOWED], INDEX.anchors_stored)


def test_each_family_is_posted_under_its_smallest() -> None:
    f = keys([DISTINCT[:15], DISTINCT[:6], DISTINCT])
    for i in range(3):
        ends = f.families[i].cumsum()
        posted = []
        for count, end, k in zip(f.families[i], ends, f.posted[i], strict=True):
            family = f.anchors[i][end - count:end]
            assert family.tolist() == sorted(family.tolist())
            posted += family[:k].tolist()
        assert f.posted_anchors(i).tolist() == posted


def test_a_scope_salts_every_key_of_its_messages() -> None:
    plain = keys([DISTINCT[:6], DISTINCT[:30]])
    salted = keys([DISTINCT[:6], DISTINCT[:30]], salts=[0, 0xABC])
    assert salted.anchors[0].tolist() == plain.anchors[0].tolist()
    assert (salted.anchors[1] ^ np.uint64(0xABC)).tolist() == plain.anchors[1].tolist()
    rows = plain.owner == 1
    assert (salted.fps[rows] ^ np.uint64(0xABC)).tolist() == plain.fps[rows].tolist()
    assert salted.fps[~rows].tolist() == plain.fps[~rows].tolist()


def test_without_anchors_only_fingerprints_are_keys() -> None:
    f = keys([DISTINCT[:6], DISTINCT], index=IndexSettings(anchors=False))
    assert [len(a) for a in f.anchors] == [0, 0]
    assert not f.families.any() and not f.posted.any() and len(f.fps) >= 2
