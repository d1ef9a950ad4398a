"""Settings read from `config.yaml` and the environment: the shipped file, a wrong key named,
environment overrides."""

from pathlib import Path

import pytest

from stream_dedup.config import Settings
from stream_dedup.config_file import load_config, settings_from_dict
from stream_dedup.errors import ConfigError

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]


def test_shipped_config_yaml_documents_the_defaults() -> None:
    assert load_config(REPO / "config.yaml", environ={}) == Settings()


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"index": {"layout": "nope"}}, "index.layout"),
        ({"index": {"max_distance": "3"}}, "index.max_distance"),
        ({"verify": {"min_jaccard": 2}}, "verify.min_jaccard"),
        ({"nope": {}}, "nope"),
        ({"state": {"colour": 1}}, "state.colour"),
        ({"metrics": {"inspector_verdicts": 0}}, "metrics.inspector_verdicts"),
        ({"metrics": {"inspector_verdicts": 1_000_001}}, "metrics.inspector_verdicts"),
        ({"metrics": {"inspector_unique_every": 0}}, "metrics.inspector_unique_every"),
        ({"metrics": {"inspector": True, "port": 0}}, "metrics.inspector"),
    ],
)
def test_bad_config_names_the_key(data: dict, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        settings_from_dict(data, environ={})
    assert err.value.key == key


def test_environment_overrides() -> None:
    s = settings_from_dict({}, environ={"STREAM_DEDUP__STATE__PATH": "/data",
                                        "STREAM_DEDUP__ENGINE__BATCH_SIZE": "50"})
    assert s.state.path == "/data" and s.engine.batch_size == 50
