"""Log output: one JSON object per line that keeps the message and lifts its key=value fields
(values as text, reserved names not overwritten), and a configuration that leaves existing
handlers alone."""

import json
import logging

import pytest

from stream_dedup.ops.logs import JsonFormatter, configure

pytestmark = pytest.mark.unit


def test_json_log_lifts_key_value_fields_and_keeps_the_message() -> None:
    record = logging.LogRecord("stream_dedup.runtime.service", logging.INFO, __file__, 1,
                               "progress records=%d unique=%d level=%s", (120, 80, "x"), None)
    out = json.loads(JsonFormatter().format(record))
    assert out["message"] == "progress records=120 unique=80 level=x"
    assert out["records"] == "120" and out["unique"] == "80"
    assert out["level"] == "INFO" and out["logger"] == "stream_dedup.runtime.service"
    assert out["time"].endswith("+00:00")


def test_json_log_carries_the_traceback() -> None:
    try:
        raise RuntimeError("state write failed")
    except RuntimeError:
        import sys

        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    out = json.loads(JsonFormatter().format(record))
    assert "RuntimeError: state write failed" in out["exception"]
def test_a_field_named_as_a_key_of_the_object_is_not_lifted() -> None:
    record = logging.LogRecord("x", logging.WARNING, __file__, 1,
                               "odd message=inner level=debug time=now n=1 n=2", (), None)
    out = json.loads(JsonFormatter().format(record))
    assert out["level"] == "WARNING" and out["message"].startswith("odd message=inner")
    assert out["time"] != "now" and out["n"] == "1"  # the first of a repeated key
    assert "exception" not in out


def test_json_keeps_chinese_text_readable() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "text=%s", ("好评",), None)
    line = JsonFormatter().format(record)
    assert "好评" in line and json.loads(line)["text"] == "好评"


def test_configure_leaves_a_root_logger_with_handlers_alone() -> None:
    root = logging.getLogger()
    own = logging.NullHandler()  # an embedding program's
    root.addHandler(own)
    try:
        before, level = list(root.handlers), root.level
        configure("json", logging.DEBUG)
        assert root.handlers == before and root.level == level
    finally:
        root.removeHandler(own)
