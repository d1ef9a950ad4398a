"""Raw records to messages: the one place that reads a record's bytes, for files and Kafka alike.

A record that cannot become a message becomes a `DeadLetter` with a reason; nothing raises.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from .config import InputSettings
from .records import DeadLetter, Message

_SURROGATE = re.compile("[\ud800-\udfff]")


def _field(obj: Any, path: str) -> Any:
    if "." not in path:  # a single name, as most are: no split, one lookup
        return obj.get(path) if isinstance(obj, dict) else None
    for part in path.split("."):
        if not isinstance(obj, dict) or part not in obj:
            return None
        obj = obj[part]
    return obj


def _has_field(obj: Any, path: str) -> bool:
    """Whether the dotted `path` is present (its value may be null)."""
    *parents, last = path.split(".")
    parent = _field(obj, ".".join(parents)) if parents else obj
    return isinstance(parent, dict) and last in parent


def _event_ms(value: Any) -> int | None:
    """Epoch seconds or milliseconds (numbers), or an ISO 8601 string."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return int(value if value > 1e11 else value * 1000)
    if isinstance(value, str):
        try:
            return int(datetime.fromisoformat(value).timestamp() * 1000)
        except ValueError:
            return None
    return None


def _depth(obj: Any) -> int:
    """Nesting depth of parsed JSON, without recursion (brackets inside strings do not count)."""
    deepest, stack = 0, [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1)
                         for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def _too_deep(doc: str, obj: Any, limit: int) -> bool:
    """Whether parsed `doc` nests deeper than `limit`. Every level opens with a bracket of its
    own, so a document with at most `limit` of them (those inside strings count too) cannot: the
    walk of the parsed value, a quarter of a record's decoding, is skipped for nearly all."""
    return doc.count("{") + doc.count("[") > limit and _depth(obj) > limit


def _json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, for reasons that say what was found."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return {dict: "an object", list: "an array", str: "a string"}[type(value)]


def _json_array(doc: str, settings: InputSettings) -> str | None:
    """Why a record of `input.format: auto` that starts with "[" is a dead letter: a JSON array
    (JSON, but not a message); None for plain text that only starts with a bracket."""
    try:
        obj = json.loads(doc)
    except (json.JSONDecodeError, RecursionError):
        return None
    if _too_deep(doc, obj, settings.max_json_depth):
        return f"JSON nested deeper than input.max_json_depth={settings.max_json_depth}"
    return f"JSON record is {_json_type(obj)}, not an object"


def _from_json(doc: str, settings: InputSettings) -> tuple[str, str | None, int | None] | str:
    """The text, id and event time (None: the record has none) of a JSON record, or the reason
    it is a dead letter."""
    try:
        obj = json.loads(doc)
    except json.JSONDecodeError as exc:
        return f"malformed JSON: {exc.msg} at column {exc.colno}"
    except RecursionError:
        return f"JSON nested deeper than input.max_json_depth={settings.max_json_depth}"
    if _too_deep(doc, obj, settings.max_json_depth):
        return f"JSON nested deeper than input.max_json_depth={settings.max_json_depth}"
    if not isinstance(obj, dict):
        return f"JSON record is {_json_type(obj)}, not an object"
    text = _field(obj, settings.text_field)
    if not isinstance(text, str):
        if text is None and not _has_field(obj, settings.text_field):
            return f"missing text field '{settings.text_field}'"
        return f"text field '{settings.text_field}' is {_json_type(text)}, not a string"
    title = _field(obj, settings.title_field) if settings.title_field else None
    if isinstance(title, str) and title.strip():
        text = f"{title}\n{text}"  # the first paragraph (fingerprint.title)
    ident = None
    if settings.id_field:
        found = _field(obj, settings.id_field)
        if isinstance(found, str | int) and not isinstance(found, bool):
            ident = str(found)
    ts = None
    if settings.time_field:
        ts = _event_ms(_field(obj, settings.time_field))
        if ts is None:
            return f"missing or unreadable time field '{settings.time_field}'"
    return text, ident, ts


def decode(raw: bytes, source: str, fallback_id: str, arrival_ms: int,
           settings: InputSettings, scope: bytes | None = None,
           origin: tuple[str, int] | None = None) -> Message | DeadLetter:
    """Decode one record. `fallback_id` is used when there is no id field (a file line number, a
    topic/partition/offset); `arrival_ms` when there is no event-time field; `scope` and
    `origin` are passed on to the message (see `Message`). A text record is its text; a JSON
    one is read by `_from_json`."""

    def dead(reason: str) -> DeadLetter:
        return DeadLetter(source, reason, raw)

    if len(raw) > settings.max_bytes:
        return dead(f"record of {len(raw)} bytes is over input.max_bytes={settings.max_bytes}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return dead(f"not UTF-8 (byte {exc.start})")
    stripped = text.strip()
    if not stripped:
        return dead("empty record")
    ident, ts = fallback_id, arrival_ms
    if settings.format == "json" or (settings.format == "auto" and stripped[0] == "{"):
        fields = _from_json(stripped, settings)
        if isinstance(fields, str):
            return dead(fields)
        text, found_id, found_ts = fields
        ident = ident if found_id is None else found_id
        ts = ts if found_ts is None else found_ts
    elif settings.format == "auto" and stripped[0] == "[" and (
            why := _json_array(stripped, settings)) is not None:
        return dead(why)
    if not text.strip():
        return dead("empty text")
    if ("\\u" in stripped and _SURROGATE.search(text)) or _SURROGATE.search(ident):
        # JSON may escape lone surrogates (\\udfff); no UTF-8 text or Kafka header can hold one.
        # Text decoded from UTF-8 holds none: only a record with a \\u escape needs the search.
        return dead("unpaired surrogate escape in JSON (not a Unicode character)")
    if len(text) > settings.max_chars:
        return dead(f"text of {len(text)} characters is over input.max_chars={settings.max_chars}")
    return Message(ident, text, ts, scope, origin)
