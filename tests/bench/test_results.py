"""bench/results.py: the stream repeated for a longer input, with fresh ids and marked texts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit


def test_a_repeated_stream_has_fresh_ids_and_each_round_its_own_texts(results) -> None:
    lines = [json.dumps({"id": f"m{n}", "text": t}, ensure_ascii=False).encode()
             for n, t in enumerate(["好评，推荐", "好评!推荐", "差评"])]
    out = [json.loads(line) for line in results.repeated(lines, 7)]
    assert len(out) == 7
    assert len({r["id"] for r in out}) == 7
    assert [r["text"] for r in out[:3]] == ["好评，推荐", "好评!推荐", "差评"]  # round 0 as it is
    first, second = out[3]["text"], out[4]["text"]
    assert [c == d for c, d in zip(first, second, strict=True)] == [True, True, False, True, True]
    common = results._common_characters()
    for before, after in zip(out[:3], out[3:6], strict=True):  # every common character moved
        assert all(c != d for c, d in zip(before["text"], after["text"], strict=True) if c in common)
    assert out[6]["text"] not in (out[0]["text"], first)


def test_a_shift_keeps_what_is_not_a_common_character(results) -> None:
    common = results._common_characters()
    assert "好" in common and "的" in common and "龥" not in common
    assert results.shifted("A1，😀龥", 1) == "A1，😀龥"
    assert results.shifted("好", 1) in common and results.shifted("好", 1) != "好"
    assert results.shifted("好", 0) == "好"


def test_a_repeated_stream_holds_the_stream_once_at_least(results) -> None:
    lines = [b'{"id": "a", "text": "x"}', b'{"id": "b", "text": "y"}']
    assert [json.loads(line)["id"] for line in results.repeated(lines, 1)] == ["a-r0", "b-r0"]


def test_the_command_names_a_file_outside_the_repository_by_its_name(results, tmp_path) -> None:
    stream = tmp_path / "feed.jsonl.gz"
    stream.write_bytes(b"")
    bench = Path(results.__file__).parent
    inside = str(bench / "results.py")
    line = results.command_line([str(bench / "kafka_bench.py"), "--input", str(stream),
                                 "--other", inside, "--state", str(tmp_path)])
    assert line == (f"python bench/kafka_bench.py --input feed.jsonl.gz --other {inside} "
                    f"--state {tmp_path}")
