import json
from dataclasses import replace

import pytest

from stream_dedup.config import Settings
from stream_dedup.records import Message
from stream_dedup.tools.eval.compare import ALL_STRATEGIES, compare, parse_strategies
from stream_dedup.tools.eval.labelled import LabelledMessage
from stream_dedup.tools.eval.report import as_json, render_markdown, render_text

pytestmark = pytest.mark.unit

STREAM = [
    LabelledMessage(Message(f"m{i}", text, i), cluster, kind)
    for i, (text, cluster, kind) in enumerate([
        ("国家统计局今天发布了全国经济数据\n专家认为市场需求继续增长", "c0", "orig"),
        ("今天天气很好我们去公园散步", "c1", "orig"),
        ("专家认为市场需求继续增长\n国家统计局今天发布了全国经济数据", "c0", "dup:reorder"),
        ("今天天气很好我们去公园散步吧", "c1", "dup:suffix"),
    ])
]


def test_parse_strategies() -> None:
    assert parse_strategies("all") == ALL_STRATEGIES
    assert parse_strategies("simhash, drpkp,simhash") == ("simhash", "drpkp")
    with pytest.raises(Exception, match="unknown strategy nope"):
        parse_strategies("simhash,nope")


def test_every_strategy_gets_a_row_and_a_curve(tmp_path) -> None:
    settings = replace(Settings(), state=replace(Settings().state, backend="memory"))
    said: list[str] = []
    found = compare(STREAM, settings, ("simhash", "tfidf", "drpkp"), str(tmp_path), said.append)
    assert [r.method for r in found.rows] == ["simhash", "tfidf", "drpkp"]
    assert [c.method for c in found.curves] == ["simhash", "tfidf", "drpkp"]
    assert any("own texts" in note for note in found.notes)
    assert any("paragraphs" in note for note in found.notes)
    assert (tmp_path / "stats.npz").exists()
    text = render_text(found.rows, found.curves, 3)
    assert "fingerprint alone" in text
    assert as_json(found.rows, found.curves, 3)["fingerprint_only"][2]["method"] == "drpkp"
    markdown = render_markdown(found, 3, "tiny")
    assert markdown.startswith("## tiny") and "| drpkp |" in markdown


def _stream_file(tmp_path) -> str:
    stream = tmp_path / "s.jsonl"
    stream.write_text("".join(
        json.dumps({"id": m.message.id, "text": m.message.text, "cluster": m.cluster,
                    "kind": m.kind}, ensure_ascii=False) + "\n" for m in STREAM),
        encoding="utf-8")
    return str(stream)


def test_eval_command_writes_markdown_and_plot(tmp_path, capsys) -> None:
    from stream_dedup.cli.main import main

    out_md, out_png = tmp_path / "r.md", tmp_path / "r.png"
    assert main(["eval", _stream_file(tmp_path), "--strategies", "simhash,drpkp",
                 "--markdown", str(out_md), "--plot", str(out_png)]) == 0
    assert "| simhash |" in out_md.read_text(encoding="utf-8")
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "fingerprint alone" in capsys.readouterr().out


def test_plot_without_strategies_is_refused(tmp_path) -> None:
    from stream_dedup.cli.main import main

    stream = tmp_path / "s.jsonl"
    stream.write_text('{"id": "a", "text": "x", "cluster": "c", "kind": "orig"}\n')
    assert main(["eval", str(stream), "--plot", str(tmp_path / "r.png")]) == 1


def test_repeated_comparison_reports_each_ratio_run_by_run(tmp_path, capsys) -> None:
    from stream_dedup.cli.main import main

    assert main(["eval", _stream_file(tmp_path), "--compare", "--runs", "2", "--json"]) == 0
    captured = capsys.readouterr()
    ratios = json.loads(captured.out)["speed_ratios"]
    assert list(ratios) == ["datasketch-0.4", "datasketch-0.5", "simhash-pkg",
                            "datasketch-0.4-bulk", "datasketch-0.4-bulk-xxh32"]
    assert all(len(values) == 2 and min(values) > 0 for values in ratios.values())
    assert "run 2 of 2" in captured.err


@pytest.mark.parametrize(("extra", "says"), [
    (["--runs", "2"], "--runs repeats the comparison with the anchors: add --compare"),
    (["--compare", "--runs", "2", "--state", "st"], "--runs needs a fresh state each run"),
])
def test_runs_need_the_anchors_and_fresh_state(tmp_path, capsys, extra, says) -> None:
    from stream_dedup.cli.main import main

    assert main(["eval", _stream_file(tmp_path), *extra]) == 1
    assert says in capsys.readouterr().err
