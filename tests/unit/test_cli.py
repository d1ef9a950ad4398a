import json
from pathlib import Path

import pytest

from stream_dedup.cli import main

pytestmark = pytest.mark.unit


def test_dedup_reports_bad_lines_and_keeps_going(tmp_path: Path, capsys) -> None:
    src = tmp_path / "in.jsonl"
    lines = [json.dumps({"id": "a", "text": "今天的天气真的非常好我们去公园散步吧"}, ensure_ascii=False),
             "{broken",
             json.dumps({"id": "b", "text": "今天的天气真的非常好，我们去公园散步吧！"}, ensure_ascii=False),
             ""]
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out, dec = tmp_path / "out.jsonl", tmp_path / "dec.jsonl"
    code = main(["dedup", str(src), "-o", str(out), "--decisions", str(dec),
                 "--state", str(tmp_path / "st"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 0
    assert f"{src}:2: malformed JSON" in err and f"{src}:4: empty record" in err
    assert out.read_text(encoding="utf-8").splitlines() == [lines[0]]
    verdicts = [json.loads(x) for x in dec.read_text(encoding="utf-8").splitlines()]
    assert [v["verdict"] for v in verdicts] == ["unique", "exact"]


def test_bad_config_is_one_line_without_traceback(tmp_path: Path, capsys) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("verify:\n  min_jaccard: 7\n", encoding="utf-8")
    assert main(["dedup", "--config", str(cfg), "-o", "-"]) == 1
    err = capsys.readouterr().err
    assert "verify.min_jaccard" in err and "Traceback" not in err


def test_check_explains(capsys) -> None:
    assert main(["check", "深市今天上涨了百分之三大家开心", "深市今天上涨了百分之三，大家开心！"]) == 0
    out = capsys.readouterr().out
    assert "verdict: exact" in out and "distance: 0 bits" in out
