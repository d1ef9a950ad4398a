"""bench/make_meaning.py: the labelled stream of reprints and meaning-changing hard negatives."""

from __future__ import annotations

import gzip
import html
import importlib
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import opencc
import pytest
from pypinyin import Style, pinyin

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"
SHIPPED = BENCH / "data" / "meaning.jsonl.gz"
SMALL_N = 1200
T2S = opencc.OpenCC("t2s")
HAN_SPACE_HAN = re.compile(r"[\u4e00-\u9fff][ \u3000]+[\u4e00-\u9fff]")


def _import_bench(name: str):
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module(name)


mm = _import_bench("make_meaning")
corpus = _import_bench("corpus")


@pytest.fixture(scope="module")
def small() -> list:
    return mm.generate(5, SMALL_N)


def _undecorated(text: str) -> str:
    text = html.unescape(re.sub(r"<[^>]*>", "", text))
    return "".join(c for c in text if c not in mm.INVISIBLES and c not in " \u3000\xa0")


def _readings(char: str) -> set[str]:
    return set(pinyin(char, style=Style.NORMAL, heteronym=True)[0])


def _edits(kind: str) -> set[str]:
    return set(kind[4:].split("+"))


# --- the stream as a whole --------------------------------------------------------------------


def test_same_seed_same_bytes_in_another_process(tmp_path: Path) -> None:
    """Byte-identical output for a seed, whatever the process's string hash seed."""
    here, there = tmp_path / "here.jsonl.gz", tmp_path / "there.jsonl.gz"
    assert mm.main(["--seed", "3", "-n", "400", "-o", str(here)]) == 0
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run(
        [sys.executable, str(BENCH / "make_meaning.py"), "--seed", "3", "-n", "400", "-o", there],
        check=True,
        env=env,
        capture_output=True,
    )
    assert here.read_bytes() == there.read_bytes()


def test_another_seed_another_stream(small: list) -> None:
    assert [line.text for line in mm.generate(6, SMALL_N)] != [line.text for line in small]
    assert [line.text for line in mm.generate(5, SMALL_N)] == [line.text for line in small]


def test_every_class_is_present(small: list) -> None:
    counts = mm.class_counts(small)
    # Expected at this size: ~65 of each reprint class, ~40 of each hard negative class.
    for name in mm.DUP_CLASSES:
        assert counts[f"dup:{name}"] >= 30, name
    for name in mm.NEG_CLASSES:
        assert counts[f"neg:{name}"] >= 25, name
    shares = {
        k: sum(1 for line in small if line.kind.startswith(k)) / SMALL_N
        for k in ("orig", "dup:", "neg:")
    }
    assert 0.38 <= shares["orig"] <= 0.52
    assert 0.28 <= shares["dup:"] <= 0.40
    assert 0.15 <= shares["neg:"] <= 0.23


def test_clusters_follow_the_format(small: list) -> None:
    seen: set[str] = set()
    for line in small:
        assert set(line.record()) == {"id", "text", "cluster", "kind"}
        if line.kind == "orig" or line.kind.startswith("neg:"):
            assert line.cluster not in seen, line  # a new message
        else:
            assert line.cluster in seen, line  # a copy of an earlier one
        seen.add(line.cluster)
    assert len({line.id for line in small}) == len(small)


def test_bases_are_plain_and_distinct(small: list) -> None:
    origs = [line.text for line in small if line.kind == "orig"]
    grams = [corpus.trigrams(text) for text in origs]
    for text in origs:
        assert 12 <= len(text) <= 120
        assert T2S.convert(text) == text
        assert _undecorated(text) == text
    holders: dict[str, list[int]] = {}
    for i, gs in enumerate(grams):
        shared: dict[int, int] = {}
        for g in gs:
            for j in holders.get(g, []):
                shared[j] = shared.get(j, 0) + 1
            holders.setdefault(g, []).append(i)
        for j, count in shared.items():
            assert count <= 0.4 * min(len(gs), len(grams[j])), (origs[i], origs[j])


def test_hard_negatives_differ_from_their_base_and_from_all_before(small: list) -> None:
    seen: set[str] = set()
    for line in small:
        key = mm.key(line.text)
        if line.kind.startswith("neg:"):
            assert line.base is not None and line.text != line.base
            assert key != mm.key(line.base), line
            assert key not in seen, line  # else it would be a duplicate whatever its label
        seen.add(key)


# --- every copy's kind names its edits --------------------------------------------------------


def test_decorations_are_named_exactly_when_present(small: list) -> None:
    for line in small:
        if not line.kind.startswith("dup:"):
            continue
        edits = _edits(line.kind)
        text = line.text
        assert ("markup" in edits) == ("<" in text or "&" in text), line
        assert ("invisible" in edits) == any(c in mm.INVISIBLES for c in text), line
        assert ("spacing" in edits) == bool(HAN_SPACE_HAN.search(text)), line
        assert ("trad" in edits) == (T2S.convert(text) != text), line


def test_copies_without_content_edits_undecorate_to_their_base(small: list) -> None:
    decorations = {"markup", "spacing", "invisible", "trad"}
    copies = [ln for ln in small if ln.kind.startswith("dup:") and _edits(ln.kind) <= decorations]
    assert copies
    for line in copies:
        assert T2S.convert(_undecorated(line.text)) == T2S.convert(line.base), line


def test_single_content_edits_do_what_they_say(small: list) -> None:
    checked = set()
    for line in small:
        if not line.kind.startswith("dup:") or "+" in line.kind:
            continue
        name, text, base = line.kind[4:], line.text, line.base
        checked.add(name)
        if name == "typo":
            diffs = [(a, b) for a, b in zip(base, text, strict=True) if a != b]
            assert 1 <= len(diffs) <= 2, line
            for a, b in diffs:
                assert _readings(a) & _readings(b), (a, b, line)
                assert not b.isdigit() and b not in corpus.NEGATORS and b not in corpus.CN_NUMERALS
        elif name == "dropped":
            assert len(text) < len(base) <= len(text) / (1 - mm.MAX_DROPPED_SHARE) + 1, line
            assert len(mm.clauses(text)) == len(mm.clauses(base)) - 1, line
        elif name == "reorder":
            assert text != base and sorted(text) == sorted(base), line
            bodies = sorted(body for body, _ in mm.clauses(text))
            assert bodies == sorted(body for body, _ in mm.clauses(base)), line
        elif name == "leadin":
            assert text.endswith(base) and len(text) > len(base), line
        elif name == "wrapper":
            assert base in text and len(text) > len(base), line
    assert checked == set(mm.DUP_CLASSES)


# --- the edits on hand-made tagged sentences --------------------------------------------------


def _base(tagged: str) -> object:
    tokens = tuple(tuple(item.rpartition("/")[::2]) for item in tagged.split())
    return mm.Base("".join(w for w, _ in tokens), tokens)


def test_dropped_needs_three_clauses_and_keeps_the_end() -> None:
    rng = random.Random(1)
    assert mm.dropped("今年粮食丰收，农民增收。", rng) is None
    text = "今年全省粮食再获丰收，农民人均收入增长百分之八，农村市场明显活跃。"
    for seed in range(20):
        out = mm.dropped(text, random.Random(seed))
        assert out is not None and out.endswith("。") and len(mm.clauses(out)) == 2


def test_swap_keeps_out_of_coordinations_and_symmetric_verbs() -> None:
    rng = random.Random(1)
    beat = _base("中国/ns 队/n 战胜/v 了/u 日本/ns 队/n 。/w")
    assert mm.swapped(beat, rng, None) == "日本队战胜了中国队。"
    assert mm.swapped(_base("中国/ns 和/c 日本/ns 签署/v 协定/n 。/w"), rng, None) is None
    assert mm.swapped(_base("中国/ns 领导人/n 会见/v 日本/ns 客人/n 。/w"), rng, None) is None


def test_negation_inserts_or_removes_one_negator() -> None:
    rng = random.Random(1)
    assert (
        mm.negation(_base("这/r 家/q 工厂/n 生产/v 汽车/n 。/w"), rng, None)
        == "这家工厂不生产汽车。"
    )
    assert mm.negation(_base("他们/r 没有/v 问题/n 。/w"), rng, None) == "他们有问题。"
    assert (
        mm.negation(_base("经济/n 发展/vn 很/d 不/d 平衡/a 。/w"), rng, None) == "经济发展很平衡。"
    )
    assert mm.negation(_base("你/r 去/v 不/d 去/v ？/w"), rng, None) is None  # a question


def test_dates_change_to_valid_values_in_their_own_script() -> None:
    rng = random.Random(1)
    for _ in range(50):
        month = mm._date_change("12月", rng)
        assert re.fullmatch(r"\d+月", month) and 1 <= int(month[:-1]) <= 12 and month != "12月"
        year = mm._date_change("一九九七年", rng)
        assert re.fullmatch(r"一九九[〇一二三四五六七八九]年", year) and year != "一九九七年"
        assert mm._date_change("三十一日", rng).endswith("日")
        assert mm._date_change("今天", rng) in {"昨天", "明天", "前天", "后天"}
    assert mm._date_change("目前", rng) is None  # vague time words are left alone


def test_numbers_change_but_not_the_article_yi() -> None:
    rng = random.Random(1)
    assert mm.changed_number(_base("一/m 个/q 城市/n 。/w"), rng, None) is None
    out = mm.changed_number(_base("来/v 了/u 三/m 名/q 专家/n 。/w"), rng, None)
    assert out is not None and out != "来了三名专家。" and out.endswith("名专家。")


def test_antonyms_come_from_the_pair_list_only_as_whole_words() -> None:
    rng = random.Random(1)
    assert mm.antonym(_base("股价/n 上涨/v 。/w"), rng, None) == "股价下跌。"
    assert mm.antonym(_base("上涨/nz 公司/n 开业/v 。/w"), rng, None) is None  # a name


def test_typo_leaves_names_and_numbers_alone() -> None:
    base = _base("王/nr 小明/nr 在/p 北京/ns 买/v 了/u 3/m 本/q 书/n 。/w")
    lexicon = mm.load_corpus()[1]
    for seed in range(30):
        out = mm.typo(base, random.Random(seed), lexicon)
        assert out is not None and out != base.text
        assert out.startswith("王小明") and "北京" in out and "3本" in out


# --- the shipped file -------------------------------------------------------------------------


def test_shipped_stream_has_every_class_at_its_minimum() -> None:
    if not SHIPPED.exists():
        pytest.skip("bench/data/meaning.jsonl.gz not generated")
    assert SHIPPED.stat().st_size < 1_000_000
    with gzip.open(SHIPPED, "rt", encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle]
    lines = [mm.Line(r["id"], r["text"], r["cluster"], r["kind"]) for r in records]
    counts = mm.class_counts(lines)
    for name in mm.DUP_CLASSES:
        assert counts[f"dup:{name}"] >= mm.MIN_PER_CLASS, name
    for name in mm.NEG_CLASSES:
        assert counts[f"neg:{name}"] >= mm.MIN_PER_CLASS, name
