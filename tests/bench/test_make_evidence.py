"""bench/make_evidence.py: the labelled streams of evidence-class reprints and hard negatives."""

from __future__ import annotations

import gzip
import importlib
import json
import re
import sys
import unicodedata
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"
SMALL_N = 900
DUPS = {
    "evidence": {"heteronym", "shape", "variant", "exact", "punct", "emoji"},
    "short": {"shape", "homophone", "emoji-inside", "repost", "tail-cut", "particle",
              "number-form"},
}
NEGS = {"word", "speaker", "name-inserted", "sentiment", "unit", "stock-phrase", "stock-reply"}


def _import_bench(name: str):
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module(name)


me = _import_bench("make_evidence")
sources = _import_bench("sources")


@pytest.fixture(scope="module", params=["evidence", "short"])
def small(request) -> tuple[str, list[dict[str, str]]]:
    try:
        lines, _ = me.generate(request.param, 5, SMALL_N)
    except sources.SourceError as exc:  # the pinned archives could not be fetched
        pytest.skip(str(exc))
    return request.param, lines


def _key(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKC", text).lower() if c.isalnum())


def test_same_seed_same_bytes(small, tmp_path: Path) -> None:
    mode, lines = small
    again, _ = me.generate(mode, 5, SMALL_N)
    first, second = tmp_path / "a.jsonl.gz", tmp_path / "b.jsonl.gz"
    me.write_and_report(first, lines, {})
    me.write_and_report(second, again, {})
    assert first.read_bytes() == second.read_bytes()
    other, _ = me.generate(mode, 6, SMALL_N)
    assert other != lines


def test_every_class_appears(small) -> None:
    mode, lines = small
    assert len(lines) == SMALL_N
    edits = {e for m in lines if m["kind"].startswith("dup:") for e in m["kind"][4:].split("+")}
    negs = {m["kind"][4:] for m in lines if m["kind"].startswith("neg:")}
    assert edits == DUPS[mode]
    assert negs == NEGS
    assert [m["id"] for m in lines] == [f"m{i}" for i in range(SMALL_N)]


def test_labels_hold(small) -> None:
    """A reprint follows its cluster's first message; a hard negative opens a cluster of its own
    with a text never seen before; an original is a new cluster."""
    _, lines = small
    first: dict[str, str] = {}
    seen: set[str] = set()
    for m in lines:
        kind, cluster = m["kind"], m["cluster"]
        if kind.startswith("dup:"):
            assert cluster in first, m
        else:
            assert cluster not in first, m
            first[cluster] = m["text"]
        if kind.startswith("neg:"):
            assert _key(m["text"]) not in seen, m
        seen.add(_key(m["text"]))


def test_reprint_classes_do_what_they_say(small) -> None:
    _, lines = small
    first: dict[str, str] = {}
    for m in lines:
        first.setdefault(m["cluster"], m["text"])
        base, text, kind = first[m["cluster"]], m["text"], m["kind"]
        if kind == "dup:exact":
            assert text == base
        elif kind == "dup:variant":
            assert me.T2S.convert(text) == base != text
        elif kind in ("dup:shape", "dup:homophone", "dup:heteronym"):
            assert len(text) == len(base)
            changed = [(a, b) for a, b in zip(base, text, strict=True) if a != b]
            assert 1 <= len(changed) <= 2, m
            for a, b in changed:
                if kind == "dup:shape":
                    assert any({a, b} <= set(g) for g in sources.same_stroke()), m
                else:
                    assert set(me.readings(a)) & set(me.readings(b)), m
        elif kind == "dup:repost":
            assert base in text and ("//@" in text or "转" in text)
        elif kind == "dup:tail-cut":
            assert base.startswith(re.sub(r"(（未完）|\.\.\.|…|【未完】|\(未完待续\))$", "", text))


def test_number_forms_keep_the_value() -> None:
    assert me.to_chinese(4000) == "四千"
    assert me.to_chinese(105) == "一百零五"
    assert me.to_chinese(12000) == "一万两千"
    assert me.from_chinese("二十") == 20
    assert me.from_chinese("一两") is None
    assert set(me.number_forms(4000)) == {"四千", "4,000", "4千"}
    assert me.number_forms(2) == ["两"]
    assert "1.5万" in me.number_forms(15000)
    for n in range(1, 100000, 37):
        assert me.from_chinese(me.to_chinese(n)) in (n, None)


@pytest.mark.parametrize("name", ["evidence", "short"])
def test_shipped_stream_holds_every_class(name: str) -> None:
    path = BENCH / "data" / f"{name}.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        lines = [json.loads(line) for line in handle]
    counts: Counter[str] = Counter()
    for m in lines:
        if m["kind"].startswith("dup:"):
            counts.update("dup:" + e for e in m["kind"][4:].split("+"))
        else:
            counts[m["kind"]] += 1
    assert len(lines) == 6000
    for edit in DUPS[name]:
        assert counts["dup:" + edit] >= me.MIN_PER_CLASS, edit
    for neg in NEGS:
        assert counts["neg:" + neg] >= me.MIN_PER_CLASS, neg
    lengths = sorted(len(m["text"]) for m in lines)
    assert lengths[len(lengths) // 2] < 25
