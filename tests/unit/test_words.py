"""Words of a normalized text as the fingerprint strategies read them: jieba's dictionary cut
(no word holds a paragraph break), stable hashes, paragraphs, and a bag of distinct words."""

import jieba
import pytest

from stream_dedup.engine.normalize import PARAGRAPH_BREAK
from stream_dedup.engine.strategies.words import (
    Bag,
    is_noun,
    is_verb,
    paragraphs,
    tagged,
    word_hashes,
    words,
)

pytestmark = pytest.mark.unit
TEXT = "我爱北京" + PARAGRAPH_BREAK + "天安门"


def test_words_are_the_dictionary_cut_without_paragraph_breaks() -> None:
    assert words(TEXT) == ["我", "爱", "北京", "天安门"]
    assert words(TEXT) == [w for w in jieba.lcut(TEXT, HMM=False) if w != PARAGRAPH_BREAK]
    assert [w for w, _ in tagged(TEXT)] == words(TEXT)
    tags = dict(tagged(TEXT))
    assert is_verb(tags["爱"]) and is_noun(tags["北京"]) and not is_noun(tags["我"])


def test_paragraphs_are_the_non_empty_ones() -> None:
    assert paragraphs(TEXT) == ["我爱北京", "天安门"]
    assert paragraphs(PARAGRAPH_BREAK + "好评" + PARAGRAPH_BREAK * 2) == ["好评"]
    assert paragraphs("好评") == ["好评"]


def test_word_hashes_are_part_of_the_stored_format() -> None:
    """Stored fingerprints are built from them: a hash that changed between releases (or was
    salted per process, as Python's hash() is) would make every stored fingerprint a stranger."""
    assert word_hashes(["北京", "天安门"]).tolist() == [0x25E0BD0FA0DA6684, 0x48803A04A6A99676]
    assert word_hashes([]).tolist() == []


def test_a_bag_counts_distinct_words_in_order_of_first_appearance() -> None:
    bag = Bag.of(["好", "评", "好", "好"])
    assert bag.words == ("好", "评") and bag.counts.tolist() == [3, 1] and bag.total == 4
    assert Bag.of([]).total == 0
