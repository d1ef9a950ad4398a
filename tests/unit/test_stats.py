import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from stream_dedup.cli.main import main
from stream_dedup.config import FingerprintSettings
from stream_dedup.config_file import settings_from_dict
from stream_dedup.engine.strategies import make_strategy
from stream_dedup.engine.strategies.fit import fit, jaccard_000
from stream_dedup.engine.strategies.stats import load
from stream_dedup.errors import ConfigError

pytestmark = pytest.mark.unit


def test_jaccard_of_000_by_hand() -> None:
    # x in 3 documents, y in 3, both in 2 (counts 2/1 and 1/1): overlap 2/(3+3-2) = 0.5;
    # sum of squared differences 1, n = 2: 1/(1 + lg sqrt(1 + 1/2)) = 0.919079.
    got = jaccard_000(np.array([2.0]), np.array([3]), np.array([3]), np.array([1.0]))
    assert got == pytest.approx([0.5 * 0.919079], rel=1e-5)


def test_fit_counts_co_occurrence_over_every_document() -> None:
    stats = fit(["苹果苹果香蕉", "苹果香蕉", "苹果", "香蕉香蕉香蕉"], top_m=20)
    ids = stats.ids(["苹果", "香蕉"])
    assert stats.df[ids].tolist() == [3, 3]
    assert stats.jaccard(ids[:1], ids[1:]) == pytest.approx([0.5 * 0.919079], rel=1e-5)
    assert stats.jaccard(ids[:1], np.array([-1])).tolist() == [0.0]


def test_neighbour_entropy_by_hand() -> None:
    # 苹果: left neighbours (start, start) -> 0; right (香蕉, 西瓜) -> ln 2. Mean ln 2 / 2.
    stats = fit(["苹果香蕉", "苹果西瓜"], top_m=20)
    ids = stats.ids(["苹果", "没见过"])
    assert stats.left_entropy[ids[0]] == 0
    assert stats.right_entropy[ids[0]] == pytest.approx(np.log(2))
    entropy = stats.entropy(ids)
    assert entropy[0] == pytest.approx(np.log(2) / 2)
    assert entropy[1] == pytest.approx(np.median((stats.left_entropy + stats.right_entropy) / 2))


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    stats = fit(["苹果香蕉", "苹果西瓜", "西瓜"], top_m=20)
    stats.save(tmp_path / "s.npz")
    back = load(tmp_path / "s.npz")
    assert back.docs == 3 and back.words.tolist() == stats.words.tolist()
    assert np.array_equal(back.pair_jaccard, stats.pair_jaccard)


@pytest.mark.parametrize("content", [b"not a zip", None])
def test_unreadable_statistics_name_the_key(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "s.npz"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ConfigError) as err:
        make_strategy(FingerprintSettings(strategy="tfidf", stats=str(path)))
    assert err.value.key == "fingerprint.stats"


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"fingerprint": {"strategy": "p-simhash"}}, "fingerprint.stats"),
        ({"fingerprint": {"title": True}}, "fingerprint.title"),
        ({"fingerprint": {"strategy": "drpkp"}}, "normalize.paragraphs"),
        ({"fingerprint": {"mu": 0}}, "fingerprint.mu"),
        ({"fingerprint": {"strategy": "nope"}}, "fingerprint.strategy"),
    ],
)
def test_strategy_settings_are_checked(data: dict, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        settings_from_dict(data, environ={})
    assert err.value.key == key


def test_fit_command_reads_texts_only(tmp_path: Path) -> None:
    stream = tmp_path / "s.jsonl.gz"
    lines = [{"id": str(i), "text": t, "cluster": "secret", "kind": "orig"}
             for i, t in enumerate(["苹果香蕉", "苹果西瓜"])]
    with gzip.open(stream, "wt", encoding="utf-8") as out:
        out.writelines(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    assert main(["fit", str(stream), "-o", str(tmp_path / "s.npz")]) == 0
    stats = load(tmp_path / "s.npz")
    assert stats.docs == 2 and "secret" not in stats.words.tolist()
