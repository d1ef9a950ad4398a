"""Who a span names: a personal pronoun, a name, a surname alone or in an address (老钱, 小戴),
and not a common word that starts like one (老师, 小心)."""

import pytest

from stream_dedup.engine.lexicon import Lexicon, lexicon
from stream_dedup.engine.persons import addressed, is_person, maybe_person, person_at

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def lex() -> Lexicon:
    return lexicon()


@pytest.mark.parametrize("part", ["我", "您", "你们", "咱们", "老钱", "小戴", "彭", "张伟"])
def test_persons(lex: Lexicon, part: str) -> None:
    assert is_person(part, lex)


@pytest.mark.parametrize("part", ["老师", "小心", "老马", "桌子", "今天"])
def test_words_that_name_no_person(lex: Lexicon, part: str) -> None:
    assert not is_person(part, lex)


def test_maybe_person_is_a_cheap_superset_on_pronouns_and_name_characters(lex: Lexicon) -> None:
    assert maybe_person("你们", lex) and maybe_person("彭", lex)
    assert not maybe_person("桌子", lex)


def test_addressed_is_the_surname_after_lao_or_xiao_in_no_longer_word(lex: Lexicon) -> None:
    assert addressed("西媒老钱大罗", 3, 4, lex)  # 钱 of 老钱
    assert not addressed("西媒老钱大罗", 2, 4, lex)  # one character only
    assert not addressed("我可以像小王子一样", 5, 6, lex)  # 小王子 is a title
    assert not addressed("还是老宾馆好", 3, 4, lex)
    assert not addressed("钱大罗", 0, 1, lex)  # nothing before it


def test_person_at_reads_a_surname_inside_a_full_name(lex: Lexicon) -> None:
    assert person_at("今天曹劲松来了", 2, 3, lex)
    assert not person_at("今天天气很好", 2, 3, lex)
