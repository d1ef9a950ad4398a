import gzip
import json
from pathlib import Path

import pytest

from stream_dedup.errors import InputError
from stream_dedup.tools.eval.labelled import (
    SYNTHETIC_EPOCH_MS,
    SYNTHETIC_STEP_MS,
    read_labelled,
    true_duplicates,
)

pytestmark = pytest.mark.unit

SAMPLE = Path(__file__).parents[2] / "stream_dedup" / "data" / "sample.jsonl.gz"


def _line(id_: str, text: str, cluster: str, kind: str, **extra: object) -> str:
    return json.dumps(
        {"id": id_, "text": text, "cluster": cluster, "kind": kind, **extra}, ensure_ascii=False
    )


GOOD = [
    _line("m0", "今天天气很好", "c0", "orig"),
    _line("m1", "明天下雨", "c1", "orig", timestamp_ms=5),
    _line("m2", "今天天气很好//@小明: 对", "c0", "dup:retweet+typo"),
    _line("m3", "今天天气不好", "n0", "neg:negation"),
]


def test_reads_plain_and_gzip_alike(tmp_path: Path) -> None:
    plain = tmp_path / "s.jsonl"
    plain.write_text("\n".join(GOOD) + "\n", encoding="utf-8")
    packed = tmp_path / "s.jsonl.gz"
    with gzip.open(packed, "wt", encoding="utf-8") as handle:
        handle.write("\n".join(GOOD) + "\n")
    assert read_labelled(plain) == read_labelled(packed)
    items = read_labelled(plain)
    assert [i.message.id for i in items] == ["m0", "m1", "m2", "m3"]
    assert items[2].cluster == "c0" and items[2].edits == ("retweet", "typo")
    assert items[3].is_hard_negative and items[3].edits == ()


def test_timestamps_given_or_synthetic_by_position(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(GOOD), encoding="utf-8")
    stamps = [i.message.timestamp_ms for i in read_labelled(path)]
    assert stamps == [
        SYNTHETIC_EPOCH_MS,
        5,
        SYNTHETIC_EPOCH_MS + 2 * SYNTHETIC_STEP_MS,
        SYNTHETIC_EPOCH_MS + 3 * SYNTHETIC_STEP_MS,
    ]


def test_truth_is_an_earlier_message_of_the_same_cluster(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(GOOD), encoding="utf-8")
    assert true_duplicates(read_labelled(path)) == [False, False, True, False]


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ("{not json", "not valid JSON"),
        ('["a list"]', "JSON object"),
        ('{"id": "m9", "text": "x", "cluster": "c9"}', "'kind'"),
        ('{"id": 9, "text": "x", "cluster": "c9", "kind": "orig"}', "'id'"),
        (_line("m9", "x", "c9", "copy"), "kind 'copy'"),
        (_line("m9", "x", "c9", "orig", timestamp_ms="soon"), "timestamp_ms"),
        (_line("m0", "x", "c9", "orig"), "already used on line 1"),
    ],
)
def test_a_bad_line_names_its_number(tmp_path: Path, bad: str, problem: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join([GOOD[0], "", bad, GOOD[1]]), encoding="utf-8")
    with pytest.raises(InputError, match=problem) as caught:
        read_labelled(path)
    assert caught.value.line == 3
    assert f"{path}:3" in str(caught.value)


def test_unreadable_files_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="No such file"):
        read_labelled(tmp_path / "missing.jsonl")
    not_gzip = tmp_path / "s.jsonl.gz"
    not_gzip.write_text(GOOD[0], encoding="utf-8")
    with pytest.raises(InputError):
        read_labelled(not_gzip)


def test_shipped_sample_is_a_valid_stream_with_duplicates_and_negatives() -> None:
    items = read_labelled(SAMPLE)
    truth = true_duplicates(items)
    assert len(items) == 3000
    assert 0.35 < sum(truth) / len(items) < 0.45
    assert 0.02 < sum(i.is_hard_negative for i in items) / len(items) < 0.06
    assert all(t == i.kind.startswith("dup:") for i, t in zip(items, truth, strict=True))
