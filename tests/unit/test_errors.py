"""The errors stream-dedup raises on purpose: one root, and one-line messages that name the key,
file or line to blame."""

import pytest

from stream_dedup import errors
from stream_dedup.errors import (
    ConfigError,
    ConfigFileError,
    InputError,
    ServiceError,
    StateError,
    StreamDedupError,
)
from stream_dedup.kafka import ServiceError as KafkaServiceError

pytestmark = pytest.mark.unit


def test_every_error_has_the_one_root() -> None:
    raised = [obj for obj in vars(errors).values()
              if isinstance(obj, type) and issubclass(obj, Exception)]
    assert set(raised) == {StreamDedupError, ConfigError, ConfigFileError, InputError, StateError,
                           ServiceError}
    assert all(issubclass(e, StreamDedupError) for e in raised)
    assert KafkaServiceError is ServiceError


def test_config_error_names_the_key_and_what_is_allowed() -> None:
    err = ConfigError("window.seconds", "must be positive", "a number > 0")
    assert str(err) == "config key 'window.seconds': must be positive (allowed: a number > 0)"
    assert (err.key, err.problem, err.allowed) == ("window.seconds", "must be positive",
                                                   "a number > 0")
    assert str(ConfigError("x", "unknown")) == "config key 'x': unknown"


def test_config_file_error_names_the_file_and_line() -> None:
    assert str(ConfigFileError("c.yaml", "bad indent", 3)) == "c.yaml line 3: bad indent"
    assert str(ConfigFileError("c.yaml", "not found")) == "c.yaml: not found"
    assert isinstance(ConfigFileError("c.yaml", "x"), ConfigError)


def test_input_error_names_the_path_and_line() -> None:
    err = InputError("in.jsonl", "not UTF-8", 12)
    assert str(err) == "in.jsonl:12: not UTF-8" and (err.path, err.line) == ("in.jsonl", 12)
    assert str(InputError("in.jsonl", "no such file")) == "in.jsonl: no such file"
