import json
import os
import tempfile
import threading
from pathlib import Path

import pytest

from stream_dedup.cli.main import main

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


def test_check_explains(capsys) -> None:
    assert main(["check", "深市今天上涨了百分之三大家开心", "深市今天上涨了百分之三，大家开心！"]) == 0
    out = capsys.readouterr().out
    assert "verdict: exact" in out and "distance: 0 bits" in out


def _write(path: Path, rows: list[tuple[str, str]]) -> Path:
    path.write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n"
                            for i, t in rows), encoding="utf-8")
    return path


def _verdicts(path: Path) -> dict[str, dict]:
    return {v["id"]: v for v in map(json.loads, path.read_text(encoding="utf-8").splitlines())}


A_TEXT = "今天的天气真的非常好我们去公园散步吧"
B_TEXT = "明天股市会上涨吗大家怎么看这个问题呢"
C_TEXT = "这是另一个文件里完全不同的一条评论内容"


def test_file_mode_twice_over_overlapping_files_reuses_no_verdict(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two runs in one directory with the default state: the second file's verdicts are its
    own, although it repeats an id (with another text) and a text of the first file."""
    monkeypatch.chdir(tmp_path)
    first = _write(tmp_path / "first.jsonl", [("1", A_TEXT), ("2", B_TEXT)])
    second = _write(tmp_path / "second.jsonl", [("1", C_TEXT), ("3", B_TEXT)])
    assert main(["dedup", str(first), "-o", "u1.jsonl", "--decisions", "d1.jsonl", "--quiet"]) == 0
    assert main(["dedup", str(second), "-o", "u2.jsonl", "--decisions", "d2.jsonl",
                 "--quiet"]) == 0
    got = _verdicts(tmp_path / "d2.jsonl")
    assert got["1"]["verdict"] == "unique" and "replayed" not in got["1"]
    assert got["3"]["verdict"] == "unique"  # the first run's "2" is not remembered
    assert [json.loads(x)["id"] for x in (tmp_path / "u2.jsonl").read_text().splitlines()] \
        == ["1", "3"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["first.jsonl", "second.jsonl", "u1.jsonl", "d1.jsonl", "u2.jsonl", "d2.jsonl"])


def test_a_kept_state_with_messages_is_refused_unless_resumed(tmp_path: Path, capsys) -> None:
    first = _write(tmp_path / "first.jsonl", [("1", A_TEXT), ("2", B_TEXT)])
    second = _write(tmp_path / "second.jsonl", [("1", C_TEXT), ("3", B_TEXT)])
    state = str(tmp_path / "st")
    assert main(["dedup", str(first), "-o", "-", "--state", state, "--quiet"]) == 0
    capsys.readouterr()
    assert main(["dedup", str(second), "-o", "-", "--state", state, "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"state {state} already holds" in err and "--resume" in err and "Traceback" not in err
    dec = tmp_path / "d.jsonl"
    assert main(["dedup", str(second), "-o", "-", "--state", state, "--resume",
                 "--decisions", str(dec), "--quiet"]) == 0
    got = _verdicts(dec)
    assert got["1"]["replayed"] is True and got["3"]["matched_id"] == "2"


def test_resume_without_state_is_refused(tmp_path: Path, capsys) -> None:
    src = _write(tmp_path / "a.jsonl", [("1", A_TEXT)])
    assert main(["dedup", str(src), "--resume", "--quiet"]) == 1
    assert "--resume needs --state" in capsys.readouterr().err


def test_yaml_error_names_file_and_line(tmp_path: Path, capsys) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("kafka:\n  bootstrap_servers: a\n   group_id: b\n", encoding="utf-8")
    assert main(["check", "--config", str(cfg), "一", "二"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"stream-dedup: {cfg} line 3: not valid YAML (")
    assert "config key" not in err and "Traceback" not in err


@pytest.mark.parametrize(("most", "most_bytes"), [(3, 1 << 20), (2, 1 << 20), (3, 10)])
def test_a_run_without_state_decides_alike_in_memory_or_on_disk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, most: int, most_bytes: int) -> None:
    """A file of at most MEMORY_STATE_RECORDS lines in MEMORY_STATE_BYTES keeps its state in
    memory, a longer one (or standard input) in a temporary RocksDB directory: the verdicts
    are the same."""
    from stream_dedup.cli import file_mode

    made: list[str] = []
    real = file_mode.tempfile.TemporaryDirectory

    def temporary(**kwargs: str) -> tempfile.TemporaryDirectory[str]:
        made.append(kwargs["prefix"])
        return real(**kwargs)

    monkeypatch.setattr(file_mode, "MEMORY_STATE_RECORDS", most)
    monkeypatch.setattr(file_mode, "MEMORY_STATE_BYTES", most_bytes)
    monkeypatch.setattr(file_mode.tempfile, "TemporaryDirectory", temporary)
    src = _write(tmp_path / "in.jsonl", [("1", A_TEXT), ("2", B_TEXT), ("3", A_TEXT + "！")])
    dec = tmp_path / "d.jsonl"
    assert main(["dedup", str(src), "-o", str(tmp_path / "u.jsonl"), "--decisions", str(dec),
                 "--quiet"]) == 0
    assert made == ([] if most == 3 and most_bytes > 10 else ["stream-dedup-state-"])
    got = _verdicts(dec)
    assert [got[i]["verdict"] for i in "123"] == ["unique", "unique", "exact"]
    assert got["3"]["matched_id"] == "1"


def test_a_named_pipe_is_read_once_and_every_record_decided(tmp_path: Path) -> None:
    """A pipe given by name (a FIFO, a shell's process substitution) can be read only once:
    choosing the state by its size must not consume the records the run then decides."""
    src = _write(tmp_path / "rows.jsonl", [("1", A_TEXT), ("2", B_TEXT), ("3", A_TEXT)])
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(src.read_bytes()))
    writer.start()
    # A run that opened the pipe a second time would wait for a writer: one comes, and goes.
    unblock = threading.Timer(10.0, lambda: fifo.write_bytes(b""))
    unblock.start()
    dec = tmp_path / "d.jsonl"
    try:
        assert main(["dedup", str(fifo), "-o", str(tmp_path / "u.jsonl"), "--decisions",
                     str(dec), "--quiet"]) == 0
    finally:
        unblock.cancel()
    writer.join()
    assert [v["verdict"] for v in _verdicts(dec).values()] == ["unique", "unique", "exact"]
