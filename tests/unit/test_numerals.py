"""Numbers in one form: the value of a numeral run, and a text with its numeral words in digits."""

import pytest

from stream_dedup.engine.numerals import in_digits, value

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("民校违规招生两百四十五名", "民校违规招生245名"),
        ("下跌至二万两千三百六十七点 收报22485点", "下跌至22367点 收报22485点"),
        ("4千块", "4000块"),
        ("十二月份", "12月份"),
        ("一个人", "一个人"),  # a numeral alone is left: 一 is also "a"
        ("第一", "第一"),
        ("几十个", "几十个"),  # not one number
    ],
)
def test_numeral_words_are_written_in_digits(text: str, expected: str) -> None:
    assert in_digits(text) == expected


def test_the_value_of_a_run() -> None:
    assert value("两百四十五") == value("245") == 245
    assert value("两个") is None
