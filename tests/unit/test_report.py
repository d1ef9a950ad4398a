import json

import pytest

from stream_dedup.tools.eval.report import as_json, render_json, render_text
from stream_dedup.tools.eval.runner import Row
from stream_dedup.tools.eval.score import Scores

pytestmark = pytest.mark.unit

ROWS = [
    Row(
        "ours",
        Scores(0.99, 0.98, 0.985, {"exact": 1.0, "typo": 0.9}, 0.05, {"numbers": 0.1},
               0, 0, 0, 0),
        12345.6,
        {"normalize": 150000.0},
    ),
    Row(
        "datasketch-0.4",
        Scores(0.947, 0.937, 0.942, {"exact": 1.0, "trad": 0.25}, 0.98, {"numbers": 0.96},
               0, 0, 0, 0),
        4500.0,
    ),
]


def test_json_has_the_contract_keys_first_and_fractions() -> None:
    data = json.loads(render_json(ROWS))
    assert data == as_json(ROWS)
    first = data["rows"][0]
    assert list(first)[:7] == [
        "method",
        "precision",
        "recall",
        "f1",
        "msgs_per_s",
        "per_kind",
        "hard_negatives_flagged",
    ]
    assert first["precision"] == 0.99 and first["per_kind"] == {"exact": 1.0, "typo": 0.9}
    assert data["rows"][1]["stage_msgs_per_s"] == {}


def test_text_tables_are_aligned_and_show_missing_kinds_as_dash() -> None:
    text = render_text(ROWS)
    summary, kinds, negatives, stages, speed = text.strip().split("\n\n")
    lines = summary.splitlines()
    assert lines[0].split() == ["method", "P", "R", "F1", "msgs/s", "hard-neg", "flagged"]
    assert len({len(line) for line in lines}) == 1  # right-aligned to one width
    assert "12,346" in lines[1] and "0.942" in lines[2]
    assert kinds.splitlines()[1].split() == ["method", "exact", "typo", "trad"]
    assert kinds.splitlines()[3].split() == ["datasketch-0.4", "1.000", "-", "0.250"]
    assert negatives.splitlines()[0] == "hard negatives flagged per kind"
    assert negatives.splitlines()[3].split() == ["datasketch-0.4", "0.960"]
    assert "150,000" in stages
    assert speed == "ours speed against each: datasketch-0.4 2.74x"


def test_repeated_runs_add_each_ratios_min_median_and_max() -> None:
    ratios = {"datasketch-0.4": [9.5, 8.25, 10.0]}
    speed, over_runs = render_text(ROWS, ratios=ratios).strip().split("\n\n")[-2:]
    assert speed == "ours speed against each: datasketch-0.4 2.74x"  # the first run's
    assert over_runs == ("ours speed against each over 3 runs (min / median / max): "
                         "datasketch-0.4 8.25x / 9.50x / 10.00x")
    assert json.loads(render_json(ROWS, ratios=ratios))["speed_ratios"] == ratios
    assert "speed_ratios" not in as_json(ROWS)
