"""A file run opened in the inspector: decisions and the run's input through the bounded ring,
and the command's errors."""

import json

import pytest

from stream_dedup.cli.main import main
from stream_dedup.config import MetricsSettings, Settings
from stream_dedup.errors import InputError
from stream_dedup.ops.inspector.files import load_run

pytestmark = pytest.mark.unit

TEXTS = ["今天北京的天气非常好，适合出门散步", "今天北京的天气非常好，适合出门散步！",
         "完全不同的另一条消息内容在这里出现", "今天北京的天气非常好，适合出门跑步"]


@pytest.fixture
def run(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"m{n}", "text": t}, ensure_ascii=False) + "\n"
                           for n, t in enumerate(TEXTS)), encoding="utf-8")
    dec = tmp_path / "dec.jsonl"
    assert main(["dedup", str(src), "-o", str(tmp_path / "out.jsonl"), "--decisions", str(dec),
                 "--quiet"]) == 0
    return src, dec


def _settings(size: int, every: int = 1) -> Settings:
    return Settings(metrics=MetricsSettings(inspector_verdicts=size, inspector_unique_every=every))


def test_decisions_with_texts_and_candidates(run) -> None:
    src, dec = run
    rows = [json.loads(line) for line in dec.read_text().splitlines()]
    assert rows[1]["verdict"] == "exact" and "candidates" not in rows[1]  # never reached the index
    ring = load_run(str(dec), str(src), _settings(100))
    assert ring.total == 4 and [s.verdict.id for s in ring.seen()] == ["m3", "m2", "m1", "m0"]
    m3 = ring.find("m3")
    assert m3 is not None and m3.text == TEXTS[3] and m3.time_ms is None
    assert ring.candidates("m3") == tuple(rows[3]["candidates"]) and "m0" in ring.candidates("m3")
    assert ring.text(m3.verdict.matched_id) == TEXTS[0]


def test_without_the_input_the_verdicts_come_without_texts(run) -> None:
    _, dec = run
    ring = load_run(str(dec), None, _settings(100))
    assert ring.total == 4 and all(s.text is None for s in ring.seen())


def test_a_small_ring_keeps_the_earlier_text_of_its_pairs(run) -> None:
    src, dec = run
    ring = load_run(str(dec), str(src), _settings(1))
    (held,) = ring.seen()
    assert held.verdict.id == "m3" and ring.text(held.verdict.matched_id) == TEXTS[0]


def test_a_line_that_is_not_a_decision_is_an_error(tmp_path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "verdict": "unique", "reason": "unique"}\n{"id": "b"}\n')
    with pytest.raises(InputError, match=r"bad\.jsonl.*2"):
        load_run(str(bad), None, _settings(10))


def test_the_command_says_what_is_wrong(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as usage:
        main(["inspect"])
    assert usage.value.code == 2
    capsys.readouterr()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    assert main(["inspect", str(bad), "--port", "0"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a decision line" in err and "Traceback" not in err
