import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_dedup.engine.normalize import (
    _LITERALS,
    _NFKC_TABLE,
    _SHORT_LINK,
    PARAGRAPH_BREAK,
    Normalizer,
    _content_table,
    _decorations,
    _keep_content,
    _remover,
    nfkc,
)

pytestmark = pytest.mark.property
NORMALIZER = Normalizer()
feedish = st.text(
    alphabet=st.sampled_from(list("今天天气很好不错的我们@#【】[]//:：，。!？ 1２ａBc😂&;<>http.cn/")),
    max_size=60,
) | st.text(max_size=40)


@settings(max_examples=300, deadline=None)
@given(feedish)
def test_normalize_is_idempotent(text: str) -> None:
    once = NORMALIZER.normalize(text)
    assert NORMALIZER.normalize(once) == once


@settings(max_examples=300, deadline=None)
@given(feedish)
def test_output_keeps_letters_and_digits_only(text: str) -> None:
    assert all(ch.isalnum() for ch in NORMALIZER.normalize(text))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=30))
def test_fast_nfkc_equals_unicodedata(text: str) -> None:
    assert nfkc(text) == unicodedata.normalize("NFKC", text)


# Characters the numpy steps treat apart: the batch's newline, "_", the paragraph break, NFKC forms
# of one and of several characters, combining marks, and letters, digits and symbols beyond the BMP.
special = st.sampled_from(
    list("\n_\u2029 a1Ａ１…㎡ﬁ\u0301\u3099가\u00b7\U00020000\U0001d400\U0001d7d9\U0001f602\U00010140")
)
unicodeish = st.text(alphabet=special | st.characters(), max_size=60)


@settings(max_examples=500, deadline=None)
@given(unicodeish, st.sampled_from(["", PARAGRAPH_BREAK]))
def test_symbols_step_equals_the_regexes(text: str, keep: str) -> None:
    regexes = re.sub(rf"[^\w\n{keep}]+", "", text).replace("_", "")
    assert _keep_content(_content_table(keep), text) == regexes


def translated_nfkc(text: str) -> str:
    """The former nfkc: str.translate of the table (which a regex split into runs sped up)."""
    text = text.translate(_NFKC_TABLE)
    return text if unicodedata.is_normalized("NFKC", text) else unicodedata.normalize("NFKC", text)


@settings(max_examples=500, deadline=None)
@given(unicodeish)
def test_nfkc_equals_the_translated_table(text: str) -> None:
    assert nfkc(text) == translated_nfkc(text)


# Pieces of short links, and what the pattern's classes take case-insensitively (K: KELVIN SIGN).
link_pieces = ["t", ".cn/", ".CN/", ".com/", ".io", "ab-9", "_", "/", ".", "\n", " ", "好", "Ab", "\u212a"]
linkish = st.lists(st.sampled_from([*link_pieces, "a" * 19]), max_size=30).map("".join)


@settings(max_examples=500, deadline=None)
@given(linkish, st.sampled_from([0, re.I]))
def test_short_link_step_equals_the_whole_batch_sub(text: str, flags: int) -> None:
    assert _remover(_SHORT_LINK, flags)(text) == re.compile(_SHORT_LINK, flags).sub(" ", text)


# Pieces of the decoration patterns' matches, their literals, and what stands around them.
decoration_pieces = ["转", "轉", "发", "//", "@a", ":", "：", "微博", "来源", "来自", "（", "）", "(", ")",
                     "[", "]", "未完", "待续", "回复", "repost", "RePost", "via", "客户端", "www.",
                     "http:", "t.cn/", "#", "【", "】", "〖", "〗", "\n", " ", "\t", "好", "a"]
decorated = st.lists(st.sampled_from(decoration_pieces), max_size=40).map("".join)


@settings(max_examples=500, deadline=None)
@given(decorated, st.sampled_from([0, re.I]))
def test_decorations_remove_what_each_line_alone_loses(text: str, flags: int) -> None:
    patterns = list(_LITERALS)
    decorate = _decorations(patterns, flags)

    def alone(line: str) -> str:
        for pattern in patterns:
            line = re.compile(pattern, flags).sub(" ", line)
        return line

    assert decorate(text) == "\n".join(alone(line) for line in text.split("\n"))


# Pieces of content (no decoration, nothing normalization changes) and what may stand between them.
piece = st.text(alphabet=st.sampled_from(list("今天天气很好不错的我们发货质量ab3")), min_size=1,
                max_size=8)
between = st.sampled_from(["，", "。", "！", "？", "；", "：", "、", "…", "~", ",", "!", "。。", "，“", ""])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(piece, between), min_size=1, max_size=6))
def test_clause_ends_are_where_the_marks_were(parts: list[tuple[str, str]]) -> None:
    raw = "".join(p + mark for p, mark in parts)
    ends, at = [], 0
    for (p, mark), (nxt, _) in zip(parts, [*parts[1:], ("", "")], strict=True):
        at += len(p)
        number = p[-1].isdigit() and nxt[:1].isdigit() and len(nfkc(mark)) == 1  # 3,5: a number
        if mark and not number and at < len(raw) and nxt and (not ends or ends[-1] != at):
            ends.append(at)
    texts, clauses = NORMALIZER.with_clauses([raw, "前文", raw])
    assert texts == NORMALIZER.normalize_batch([raw, "前文", raw])
    assert clauses[0] == clauses[2] == tuple(ends)
