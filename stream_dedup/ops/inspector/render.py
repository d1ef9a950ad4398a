"""HTML of the inspector's pages: Jinja2 templates with autoescaping on, and the filters that
show hostile text as text.

Texts come from anyone who can post to the feed, so every text is escaped, and what a reader
would not see or what would reorder the page around it (control and format characters such as
U+202E right-to-left override, zero-width joiners, lone surrogates, private-use characters) is
shown as a visible code point mark instead. Each text sits in its own bidirectional isolate
(CSS), and long texts are clipped in lists and wrapped anywhere in pairs, so the layout holds."""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape

from ...engine.meaning import MEANING_CLASSES

# Categories drawn as marks: controls, format characters, surrogates, private use, line and
# paragraph separators.
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Co", "Zl", "Zp"})
PREFIX = "/inspect"  # where the pages are, on the metrics port or a port of their own
LIST_CHARS = 160  # a text in the list of verdicts is cut after this many characters
# The classes of a differing span (`meaning.classify`): those that leave the meaning, then the
# meaning changes.
KINDS = ("material", "reorder", "typo", "script", "form", "synonym", "noise", "edit",
         *MEANING_CLASSES)


def visible(text: str | None) -> Markup:
    """`text` escaped, each hidden character replaced by a visible mark naming its code point."""
    if text is None:
        return Markup("")
    out: list[str] = []
    for ch in text:
        if unicodedata.category(ch) in _HIDDEN:
            out.append(f'<span class="cp" title="invisible character">U+{ord(ch):04X}</span>')
        else:
            out.append(str(escape(ch)))
    return Markup("".join(out))


def clip(text: str | None, chars: int = LIST_CHARS) -> str:
    """`text` cut to `chars` characters, with the count of the rest."""
    if text is None or len(text) <= chars:
        return text or ""
    return f"{text[:chars]}… (+{len(text) - chars:,} characters)"


def kind_class(kind: str | None) -> str:
    """The CSS class of a span's meaning class (a known name, or `other`)."""
    return f"k-{kind}" if kind in KINDS else "k-other"


def when(time_ms: int | None) -> str:
    """A verdict's time in UTC, to the second."""
    if time_ms is None:
        return "-"
    return datetime.fromtimestamp(time_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


def message_url(ident: str) -> str:
    """The lookup page of one message id."""
    return f"{PREFIX}/message?id={quote(ident.encode('utf-8', 'replace'), safe='')}"


def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(Path(__file__).parent / "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters.update(visible=visible, clip=clip, kind_class=kind_class, when=when)
    env.globals.update(KINDS=KINDS, PREFIX=PREFIX, message_url=message_url)
    return env


ENV = _environment()


def page(template: str, **values: Any) -> bytes:
    """A rendered page as UTF-8 (a lone surrogate left in a value cannot break the encoding)."""
    return ENV.get_template(template).render(**values).encode("utf-8", "replace")
