"""Raw records to messages or dead letters."""

import pytest

from stream_dedup.config import InputSettings
from stream_dedup.decode import decode
from stream_dedup.records import DeadLetter, Message

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"\xff\xfe", "not UTF-8"),
        (b"   ", "empty record"),
        (b'{"text": ', "malformed JSON"),
        (b'{"body": "x"}', "missing text field"),
        (b'{"text": 12345}', "text field 'text' is a number, not a string"),
        (b'{"text": null}', "text field 'text' is null, not a string"),
        (b'{"text": ["a"]}', "text field 'text' is an array, not a string"),
        (b"[1]", "JSON record is an array, not an object"),
        ("[公告] 明天停电".encode(), None),  # text that starts with a bracket
        (b"x" * 70000, "over input.max_bytes"),
        (b"[" * 10 + b"]" * 10, "JSON record is an array, not an object"),
        (b"[" * 100 + b"]" * 100, "JSON nested deeper than input.max_json_depth"),
        (b'"just a string"', None),  # plain text in quotes
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


@pytest.mark.parametrize(
    ("raw", "deep"),
    [
        (b'{"a": {"b": 1}, "text": "x"}', False),  # 2 levels: at the limit
        (b'{"a": {"b": [1]}, "text": "x"}', True),  # 3 levels
        (b'{"a": [], "b": [], "c": {}, "text": "x"}', False),  # many brackets, 2 levels
        (b'{"text": "[[[{{{"}', False),  # brackets inside a string are not levels
        (b'{"text": "[[[", "a": [[1]]}', True),
    ],
)
def test_depth_limit_counts_levels_not_brackets(raw: bytes, deep: bool) -> None:
    out = decode(raw, "s", "f", 5, InputSettings(max_json_depth=2))
    assert isinstance(out, DeadLetter if deep else Message)
    assert deep == (isinstance(out, DeadLetter) and "max_json_depth=2" in out.reason)


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (b'{"text": "a\\ud800"}', None),  # a lone escaped surrogate in the text
        (b'{"text": "x", "title": "\\udfff"}', None),  # in the title
        (b'{"text": "x", "id": "\\udc00"}', None),  # in the id
        (b'{"text": "a\\\\ud800"}', "a\\ud800"),  # an escaped backslash: no surrogate
        (b'{"text": "\\ud83d\\ude00"}', "\U0001f600"),  # a pair: one character
        (b"plain \\ud800", "plain \\ud800"),  # plain text: a backslash and letters
    ],
)
def test_lone_surrogate_escapes_become_dead_letters(raw: bytes, text: str | None) -> None:
    out = decode(raw, "s", "f", 5, InputSettings(title_field="title"))
    if text is None:
        assert isinstance(out, DeadLetter) and out.reason.startswith("unpaired surrogate")
    else:
        assert isinstance(out, Message) and out.text == text
