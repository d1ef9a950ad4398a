"""Log output: human lines by default, one JSON object per line with ``--log-format json``.

The program logs messages of the form ``what key=value key=value`` (lazy ``%s`` arguments). The
JSON form keeps the whole message and also lifts each ``key=value`` into its own field, so a log
pipeline can filter on ``records`` or ``partitions`` without parsing text. Values stay strings:
the message text decides nothing about types.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import Literal

LogFormat = Literal["human", "json"]
LOG_FORMATS: tuple[LogFormat, ...] = ("human", "json")
HUMAN_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_FIELD = re.compile(r"(?:^|\s)([a-z_][a-z0-9_.]*)=(\S+)")
# Keys of the JSON object itself; a message field with one of these names is not lifted.
_RESERVED = frozenset({"time", "level", "logger", "message", "exception"})


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time (UTC, ISO 8601), level, logger, message, the message's
    ``key=value`` fields, and the traceback as ``exception`` when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        out: dict[str, str] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": message,
        }
        for key, value in _FIELD.findall(message):
            if key not in _RESERVED:
                out.setdefault(key, value)
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


def configure(fmt: LogFormat = "human", level: int = logging.INFO) -> None:
    """Send the root logger's records to stderr in `fmt`. Like `logging.basicConfig`, it does
    nothing when the root logger has handlers already (an embedding program's, pytest's)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(HUMAN_FORMAT))
    logging.basicConfig(level=level, handlers=[handler])
