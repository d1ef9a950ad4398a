"""The value of a number as feeds write it: 4000, 四千, 4千 and 4k are one value, and a
number changed is a change of value, not of spelling (cn2an reads Chinese numerals, mixed forms
such as 3万5千 included)."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache, lru_cache
from typing import Any

NUMERAL_CHARS = frozenset("0123456789零〇一二三四五六七八九十百千万亿两")
# A run of two numerals or more with a numeral word in it (两百四十五, 4千, 十二).
_WORDED = re.compile(r"[0-9零〇一二三四五六七八九十百千万亿两]*[零〇一二三四五六七八九十百千万亿两]"
                     r"[0-9零〇一二三四五六七八九十百千万亿两]*")


def run_around(text: str, start: int, end: int) -> tuple[int, int]:
    """The run of numeral characters that text[start:end] touches, grown to its full extent
    (the span itself when it touches none)."""
    while start > 0 and text[start - 1] in NUMERAL_CHARS:
        start -= 1
    while end < len(text) and text[end] in NUMERAL_CHARS:
        end += 1
    return start, end


@cache
def _reader() -> Callable[[str, str], Any]:
    """cn2an's reader, imported and its patterns compiled once (a fifth of a second)."""
    import cn2an

    cn2an.cn2an("一", "smart")
    return cn2an.cn2an


def in_digits(text: str) -> str:
    """`text` with every number written with numeral words (两百四十五, 4千) written in digits
    (245, 4000), when it reads as one whole number: the text as it reads with its numbers in
    one form."""
    def digits(found: re.Match[str]) -> str:
        number = found.group()
        read = value(number) if len(number) > 1 else None
        return str(int(read)) if read is not None and read.is_integer() else number

    return _WORDED.sub(digits, text)


def warm_up() -> None:
    """Load the reader now, with the other resources, rather than at the first Chinese numeral."""
    _reader()


@lru_cache(maxsize=1 << 12)
def value(numeral: str) -> float | None:
    """The value of a numeral run (Arabic, Chinese or mixed), None when it is not one number."""
    if not numeral or any(c not in NUMERAL_CHARS for c in numeral):
        return None
    if numeral.isdigit():
        return float(numeral)
    try:
        return float(_reader()(numeral, "smart"))
    except (ValueError, KeyError, IndexError):
        return None
