import json

import numpy as np
import opencc
import pytest

from stream_dedup.engine import simplify
from stream_dedup.engine.simplify import Simplifier, _dictionaries, _entries, witnesses

pytestmark = pytest.mark.unit
CONVERTER = opencc.OpenCC("t2s")


def test_every_entry_that_changes_its_key_holds_a_witness() -> None:
    table = witnesses(CONVERTER.config)
    assert table is not None
    changing = [key for path in _dictionaries(CONVERTER.config) for key, value in _entries(path)
                if key != value]
    assert changing  # the dictionaries were read
    assert all(any(table[ord(ch)] for ch in key) for key in changing)


def test_a_line_without_witness_is_what_opencc_leaves_unchanged() -> None:
    table = witnesses(CONVERTER.config)
    assert table is not None
    plain = [chr(c) for c in range(0x4E00, 0x9FA6) if not table[c]]
    text = "".join(plain)
    assert CONVERTER.convert(text) == text


@pytest.mark.parametrize("text", [
    "", "這", "甚麼", "憑藉一己之力", "好\n這是繁體字\n好的", "\n\n憑藉\n", "今天天气很好\n还行",
    "么麼\n幺", "乾隆年間\n乾净", "這\n", "\n這",
])
def test_converts_as_opencc_does(text: str) -> None:
    assert Simplifier(CONVERTER)(text) == CONVERTER.convert(text)


def test_an_unreadable_configuration_converts_every_line(tmp_path) -> None:
    config = tmp_path / "t2s.json"
    config.write_text(json.dumps({"conversion_chain": [{"dict": {"type": "marisa",
                                                                  "file": "x"}}]}))
    assert witnesses(str(config)) is None


def test_reads_text_dictionaries(tmp_path) -> None:
    (tmp_path / "d.txt").write_text("甲乙\t甲丙 甲丁\n戊\t戊 己\n", encoding="utf-8")
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"conversion_chain": [{"dict": {"type": "group", "dicts": [
        {"type": "text", "file": "d.txt"}]}}]}))
    table = witnesses(str(config))
    assert table is not None
    # 乙 is what 甲乙 changes; 戊's first value is itself: no witness
    assert np.flatnonzero(table[:0xD800]).tolist() == [ord("乙")]


def test_witnesses_are_derived_once_then_read_from_the_user_cache(
        tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAM_DEDUP_CACHE_DIR", str(tmp_path / "cache"))
    derived = witnesses.__wrapped__(CONVERTER.config)
    assert [p.name.split("-")[0] for p in (tmp_path / "cache").iterdir()] == ["witnesses"]

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("the dictionary tool ran again")

    monkeypatch.setattr(simplify.subprocess, "run", refused)
    cached = witnesses.__wrapped__(CONVERTER.config)
    assert cached is not None and derived is not None
    assert np.array_equal(cached, derived) and cached is not derived
