"""File mode's `--metrics-textfile`: the file node-exporter would read says what the summary
line says."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from stream_dedup.cli.main import main

pytestmark = pytest.mark.unit


def test_dedup_writes_the_summary_counts_to_the_textfile(tmp_path: Path, capsys) -> None:
    src = tmp_path / "in.jsonl"
    texts = ["今天的天气真的非常好我们去公园散步吧", "今天的天气真的非常好，我们去公园散步吧！",
             "深市今天上涨了百分之三大家都很开心", "今天的天气真的非常好我们一起去公园散步吧"]
    lines = [json.dumps({"id": str(i), "text": t}, ensure_ascii=False)
             for i, t in enumerate(texts)]
    src.write_text("\n".join([*lines, "{broken", json.dumps({"id": "0", "text": texts[0]})])
                   + "\n", encoding="utf-8")
    prom = tmp_path / "textfile" / "stream_dedup.prom"
    prom.parent.mkdir()
    assert main(["dedup", str(src), "-o", str(tmp_path / "u.jsonl"), "--state",
                 str(tmp_path / "st"), "--quiet", "--metrics-textfile", str(prom)]) == 0
    summary = capsys.readouterr().err.splitlines()[-1]
    said = {k: int(v.replace(",", "")) for v, k in re.findall(r"([\d,]+) (records|unique|exact|near|dead "
                                              r"letters|replayed)", summary)}
    samples = {(s.name, s.labels.get("verdict", s.labels.get("topic"))): s.value
               for f in text_string_to_metric_families(prom.read_text()) for s in f.samples}
    assert samples[("stream_dedup_messages_in_total", "file")] == said["records"] == 6
    for verdict in ("unique", "exact", "near"):
        assert samples[("stream_dedup_verdicts_total", verdict)] == said[verdict]
    assert samples[("stream_dedup_verdicts_total", "dead_letter")] == said["dead letters"] == 1
    assert samples[("stream_dedup_replayed_total", None)] == said["replayed"] == 1
    assert samples[("stream_dedup_index_entries", None)] == 4
    assert samples[("stream_dedup_state_disk_bytes", None)] > 0
    assert not any(name.startswith("process_") for name, _ in samples)
    assert not list(prom.parent.glob("*.tmp*")), "the write is atomic: no temporary file left"
