import pytest

from stream_dedup.config import NormalizeSettings
from stream_dedup.engine.normalize import PARAGRAPH_BREAK, Normalizer

pytestmark = pytest.mark.unit
KEEP = Normalizer(NormalizeSettings(paragraphs=True))


def test_line_breaks_become_one_paragraph_break_each() -> None:
    got = KEEP.normalize("标题！\n\n第一段，内容。\r\n  \n第二段：好的\n")
    assert got == PARAGRAPH_BREAK.join(["标题", "第一段内容", "第二段好的"])


def test_without_the_setting_lines_run_together() -> None:
    assert Normalizer().normalize("标题\n正文") == "标题正文"
    assert Normalizer().normalize("a\u2029b") == "ab"


def test_batches_keep_texts_apart_and_normalizing_twice_changes_nothing() -> None:
    texts = ["标题\n正文", "。。\n\n", "一\n二\n三"]
    once = KEEP.normalize_batch(texts)
    assert once == [KEEP.normalize(t) for t in texts]
    assert once[1] == ""
    assert KEEP.normalize_batch(once) == once


def test_symbols_kept_still_keep_paragraphs() -> None:
    keep_symbols = Normalizer(NormalizeSettings(paragraphs=True, symbols=False))
    assert keep_symbols.normalize("甲,乙\n 丙") == "甲,乙" + PARAGRAPH_BREAK + "丙"
