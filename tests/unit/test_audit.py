"""stream_dedup/tools/audit.py: the Wilson interval, scoring by reason and length band, reading pairs."""

import json
import math
from pathlib import Path

import pytest

from stream_dedup.errors import InputError
from stream_dedup.tools.audit import Precision, read_pairs, score

pytestmark = pytest.mark.unit


def test_wilson_interval_against_hand_computed_value() -> None:
    # 8 of 10, z = 1.96: centre = (0.8 + 1.96²/20) / (1 + 1.96²/10) = 0.99208 / 1.38416,
    # half = 1.96 * sqrt(0.8 * 0.2 / 10 + 1.96² / 400) / 1.38416 = 1.96 * sqrt(0.025604) / 1.38416
    centre = 0.99208 / 1.38416
    half = 1.96 * math.sqrt(0.025604) / 1.38416
    low, high = Precision(8, 10).interval
    assert low == pytest.approx(centre - half, abs=1e-9)
    assert high == pytest.approx(centre + half, abs=1e-9)
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)  # the published Wilson bounds
    assert Precision(8, 10).value == 0.8
    assert str(Precision(8, 10)) == "0.800 [0.490, 0.943] (8/10)"


def test_wilson_interval_edges() -> None:
    low, high = Precision(10, 10).interval
    assert high == 1.0 and low == pytest.approx(10 / (10 + 1.96**2), abs=1e-9)
    low, high = Precision(0, 10).interval
    assert low == 0.0 and high == pytest.approx(1.96**2 / (10 + 1.96**2), abs=1e-9)
    assert all(math.isnan(x) for x in (Precision(0, 0).value, *Precision(0, 0).interval))


def _pair(label: str | None, reason: str, text: str, matched: str, kind: str = "flagged") -> dict:
    return {"kind": kind, "id": "b", "text": text, "matched_id": "a", "matched_text": matched,
            "reason": reason, "label": label, "note": ""}


EXACT = "exact: same normalized text"
NEAR = "near: distance 5, similarity 0.80"


def test_score_by_reason_and_length_band() -> None:
    pairs = [
        _pair("dup", EXACT, "图片新闻", "图片新闻"),                          # band 0-9
        _pair("dup", EXACT, "本报驻委内瑞拉记者管彦忠", "本报驻委内瑞拉记者管彦忠"),  # 10-29 (12)
        _pair("related", NEAR, "傅全有会见美国防部长", "傅全有会见美国前国防部长"),   # 10-29 (10)
        _pair("dup", NEAR, "a" * 79, "b" * 200),                         # 30-79: the shorter
        _pair("different", NEAR, "c" * 80, "d" * 80),                    # >=80
        _pair(None, NEAR, "e" * 5, "e" * 5),                             # not judged: skipped
        _pair("dup", NEAR, "f" * 5, "f" * 5, kind="near_miss"),          # near miss: skipped
    ]
    result = score(pairs)
    assert set(result) == {"all", "reason", "length"}
    assert (result["all"]["all"].dup, result["all"]["all"].judged) == (3, 5)
    assert {k: (p.dup, p.judged) for k, p in result["reason"].items()} == {
        "exact": (2, 2), "near": (1, 3)}
    assert {k: (p.dup, p.judged) for k, p in result["length"].items()} == {
        "0-9 chars": (1, 1), "10-29 chars": (1, 2), "30-79 chars": (1, 1), ">=80 chars": (0, 1)}


def test_score_of_nothing_judged_is_empty() -> None:
    assert score([_pair(None, EXACT, "x", "x")]) == {"all": {}, "reason": {}, "length": {}}


def test_read_pairs_accepts_labels_and_null(tmp_path: Path) -> None:
    path = tmp_path / "pairs.jsonl"
    rows = [_pair(label, EXACT, "同一句话", "同一句话") for label in ("dup", "related", "different")]
    rows.append(_pair(None, EXACT, "同一句话", "同一句话"))
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows) + "\n",
                    encoding="utf-8")
    assert [p["label"] for p in read_pairs(str(path))] == ["dup", "related", "different", None]


def test_read_pairs_rejects_a_bad_label_with_its_line_number(tmp_path: Path) -> None:
    path = tmp_path / "pairs.jsonl"
    rows = [_pair("dup", EXACT, "x", "x"), _pair("related", NEAR, "y", "z"),
            _pair("duplicate", EXACT, "x", "x")]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_pairs(str(path))
    assert info.value.line == 3 and info.value.path == str(path)
    assert str(info.value).startswith(f"{path}:3: label must be one of dup, related, different")


def test_read_pairs_rejects_a_line_that_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps(_pair("dup", EXACT, "x", "x")) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_pairs(str(path))
    assert info.value.line == 2 and "not JSON" in str(info.value)
