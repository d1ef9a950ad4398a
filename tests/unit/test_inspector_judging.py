"""Judging an audit sample in the inspector: labels written back to the file, the running
precision from the audit module."""

import io
import json
from pathlib import Path
from urllib.parse import urlencode

import pytest

from stream_dedup.config import Settings
from stream_dedup.errors import InputError
from stream_dedup.ops.inspector.app import Inspector
from stream_dedup.ops.inspector.judging import Judging
from stream_dedup.tools.audit import read_pairs, score

pytestmark = pytest.mark.unit


def _pairs(path: Path) -> Path:
    rows = [{"kind": "flagged", "id": "b", "text": "深市今天上涨了百分之三！", "matched_id": "a",
             "matched_text": "深市今天上涨了百分之三", "verdict": "near", "reason": "near: jaccard",
             "distance": 1, "similarity": 0.9, "label": None, "note": "keep me"},
            {"kind": "flagged", "id": "d", "text": "今天下雨", "matched_id": "c",
             "matched_text": "今天下雨了", "verdict": "near", "reason": "near: aligned",
             "distance": 2, "similarity": 0.8, "label": "related", "note": ""},
            {"kind": "near_miss", "id": "f", "text": "明天下雨", "matched_id": "e",
             "matched_text": "今天下雨", "verdict": "unique", "reason": "unique",
             "distance": 3, "similarity": 0.5, "label": None, "note": ""}]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def test_a_label_is_written_back_keeping_every_other_field(tmp_path) -> None:
    path = _pairs(tmp_path / "pairs.jsonl")
    before = read_pairs(str(path))
    judging = Judging(str(path))
    judging.label(0, "dup")
    after = read_pairs(str(path))
    assert after[0] == {**before[0], "label": "dup"} and after[1:] == before[1:]
    assert judging.precision() == score(after)["all"]["all"]
    assert str(judging.precision()).startswith("0.500 [")  # 1 dup of 2 judged flagged pairs
    judging.label(0, None)
    assert read_pairs(str(path))[0]["label"] is None
    assert [p.name for p in tmp_path.iterdir()] == ["pairs.jsonl"]  # no temporary file left


def test_unknown_labels_and_pairs_are_refused(tmp_path) -> None:
    judging = Judging(str(_pairs(tmp_path / "pairs.jsonl")))
    with pytest.raises(InputError):
        judging.label(0, "maybe")
    with pytest.raises(InputError):
        judging.label(3, "dup")


def test_next_unlabelled_wraps_round(tmp_path) -> None:
    judging = Judging(str(_pairs(tmp_path / "pairs.jsonl")))
    assert judging.next_unlabelled() == 0
    assert judging.next_unlabelled(0) == 2
    assert judging.next_unlabelled(2) == 0


def test_the_label_form_writes_and_moves_on(tmp_path) -> None:
    path = _pairs(tmp_path / "pairs.jsonl")
    app = Inspector(Settings(), None, Judging(str(path)))
    body = urlencode({"i": "0", "label": "different"}).encode()
    got = {}
    app({"PATH_INFO": "/inspect/audit", "REQUEST_METHOD": "POST", "HTTP_HOST": "h",
         "CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body)},
        lambda status, headers: got.update(status=status, headers=dict(headers)))
    assert got["status"].startswith("303") and got["headers"]["Location"] == "/inspect/audit?i=2"
    assert read_pairs(str(path))[0]["label"] == "different"
    page = b"".join(app({"PATH_INFO": "/inspect/audit", "REQUEST_METHOD": "GET",
                         "QUERY_STRING": "i=2"}, lambda *a: None)).decode()
    assert "0.000 [" in page and "明天下雨" in page  # 0 dup of 2 judged flagged pairs
