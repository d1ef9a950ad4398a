from pathlib import Path

import pytest

from stream_dedup.config import InputSettings, Settings, load_config, settings_from_dict
from stream_dedup.decode import decode
from stream_dedup.errors import ConfigError
from stream_dedup.records import DeadLetter, Message

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


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"\xff\xfe", "not UTF-8"),
        (b"   ", "empty record"),
        (b'{"text": ', "malformed JSON"),
        (b'{"body": "x"}', "missing text field"),
        (b"[1]", None),  # plain text that happens to look like a list
        (b"x" * 70000, "over input.max_bytes"),
        (b"[" * 100 + b"]" * 100, None),
    ],
)
def test_bad_records_become_dead_letters(raw: bytes, reason: str | None) -> None:
    out = decode(raw, "f:1", "line:1", 5, InputSettings())
    if reason is None:
        assert isinstance(out, Message)
    else:
        assert isinstance(out, DeadLetter) and reason in out.reason


def test_nested_fields_and_event_time() -> None:
    settings = InputSettings(text_field="data.content", id_field="data.id", time_field="ts")
    out = decode(b'{"data": {"content": "hi", "id": 7}, "ts": 1700000000}', "s", "f", 5, settings)
    assert out == Message("7", "hi", 1_700_000_000_000)
