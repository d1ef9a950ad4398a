"""Normalization made for Chinese feeds.

Two texts that say the same thing on a feed differ by decoration far more often than by wording:
a retweet chain, an @mention, a #topic# or 【tag】, a short link, an emoticon, full-width digits,
traditional script, punctuation. Each class of decoration is one step here, switched in config
(`normalize.*`). Rules name classes of decoration (a bracketed short tag, a URL, a code point
category), never strings seen in any one feed.

The result keeps letters and digits only: punctuation, symbols and spacing carry no content for
dedup, and feeds rewrite them freely (a decimal point "9.5" retyped as "9。5" or dropped). With
`normalize.paragraphs` on, a text's line breaks survive as one PARAGRAPH_BREAK each, for the
fingerprint strategies that read paragraphs or a title line (drpkp, weighted).
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import opencc

# A batch is normalized as one string, its texts joined by newlines, so every step runs once per
# batch in C (regex, NFKC, OpenCC) instead of once per message. No pattern below may match "\n".

# Markup scraped from web pages: tags and character references (decoded before anything else
# so that "&#65292;" does not leave digits behind).
_TAG_RE = re.compile(r"<[a-zA-Z/!][^<>\n]{0,200}>")
# Retweet-chain and reply markers ("//@name:", "回复@name:"). Only the markers go: which segment
# of a chain is the content differs between platforms, so the segments' words stay and the
# near stage's containment measure weighs a short added comment against the reposted text.
# Each pattern starts with a literal or a character set, so the regex engine can skip ahead to
# candidate positions (one alternation of them all was 3x slower).
_RETWEET = (r"//[ \t]*@[^:：\s]{1,30}[ \t]*[:：]", r"回[复覆][ \t]*@[^:：\s]{1,30}[ \t]*[:：]")
# The text a platform fills in when a post is forwarded without words of its own. "repost" is
# the word \brepost\b written literal first (the lookbehind is the leading \b), 40x faster.
_FORWARD = (r"[转轉][发發]微博", r"repost\b(?<!\wrepost)")
_NOT_URL = r"[^\s\u3000-\u303f\uff00-\uffef\u4e00-\u9fff]+"
_URL = (
    r"https?://" + _NOT_URL,
    r"www\." + _NOT_URL,
    r"[a-z0-9-]{1,20}\.(?:cn|com|net|org|ly|me|io|gl|im)/[a-z0-9_\-/]+",  # short links
)
_MENTION = (r"@[\w\u00b7\-]{1,30}",)
# Topic tags "#…#" and lenticular-bracket tags "【…】"; square-bracket spans are emoticons
# ("[哈哈]") or source tags ("[转载]"): short, no nested brackets.
_TAGS = (r"#[^#\n]{1,40}#", r"【[^【】\n]{0,40}】", r"〖[^〖〗\n]{0,40}〗")
_BRACKET_TAG = (r"\[[^\[\]\n]{1,10}\]",)
# Everything but letters and digits (str.isalnum), except the newlines between texts: what is
# not a word character, then "_" (the word character that is not alphanumeric). Deleting the two
# in turn deletes what "[^\w\n]+|_+" does, 1.5x faster: the alternation defeats the regex
# engine's scan for the character set.
_NOT_CONTENT = r"[^\w\n{keep}]+"
_SPACES = r"[^\S\n{keep}]+"
# Between paragraphs when `paragraphs` is on (U+2029 PARAGRAPH SEPARATOR: never content, never
# the newline that joins a batch). Runs collapse to one; none is left at either end of a text.
PARAGRAPH_BREAK = "\u2029"
_BREAK_RUN_RE = re.compile(r"[^\S\n]*\u2029[^\S\n]*")
_EDGE_BREAK_RE = re.compile(r"^\u2029|\u2029$", re.M)


@dataclass(frozen=True, slots=True)
class NormalizeSettings:
    """Which decoration classes are removed; every field is a config key under `normalize`."""

    markup: bool = True
    nfkc: bool = True
    traditional_to_simplified: bool = True
    lowercase: bool = True
    retweets: bool = True
    mentions: bool = True
    tags: bool = True
    urls: bool = True
    emoticons: bool = True
    # Punctuation, symbols (emoji among them), whitespace and invisible characters.
    symbols: bool = True
    # Line breaks inside a text are kept as PARAGRAPH_BREAK (paragraph-aware fingerprints).
    paragraphs: bool = False


def _nfkc_table() -> dict[int, str]:
    """NFKC of every BMP character it changes, for str.translate (one C pass over a batch)."""
    table = {}
    for code in range(0x10000):
        if 0xD800 <= code < 0xE000:
            continue  # surrogates
        ch = chr(code)
        mapped = unicodedata.normalize("NFKC", ch)
        if mapped != ch:
            table[code] = mapped
    return table


def _runs_of(codes: list[int]) -> re.Pattern[str]:
    """A pattern capturing runs of the given code points (sorted), as ranges."""
    ranges: list[list[int]] = []
    for code in codes:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    parts = (re.escape(chr(lo)) + (f"-{re.escape(chr(hi))}" if hi > lo else "")
             for lo, hi in ranges)
    return re.compile("([" + "".join(parts) + "]+)")


_NFKC_TABLE = _nfkc_table()
# Most characters of a Chinese text are not in the table; translating only the runs that are
# costs half of translating the whole batch (a dict lookup for every character). The pattern
# captures, so re.split returns the text between runs and the runs alternately.
_NFKC_RUN_RE = _runs_of(sorted(_NFKC_TABLE))


def nfkc(text: str) -> str:
    """NFKC, fast: each character is replaced by its own NFKC form, then the rare string that is
    still not normalized (combining sequences, characters beyond the BMP) is normalized whole.
    NFKC of the per-character forms equals NFKC of the original, so the result is exact."""
    parts = _NFKC_RUN_RE.split(text)
    if len(parts) > 1:
        # The runs translated in one call, joined by NUL (neither in the table nor in any of its
        # values): a callback per run (four a message) cost 1.3x more.
        parts[1::2] = "\0".join(parts[1::2]).translate(_NFKC_TABLE).split("\0")
        text = "".join(parts)
    return text if unicodedata.is_normalized("NFKC", text) else unicodedata.normalize("NFKC", text)


def _drop_underscores(text: str) -> str:
    return text.replace("_", "")


def _tidy_breaks(text: str) -> str:
    return _EDGE_BREAK_RE.sub("", _BREAK_RUN_RE.sub(PARAGRAPH_BREAK, text))


def _strip_markup(text: str) -> str:
    if "<" not in text and "&" not in text:
        return text
    return html.unescape(_TAG_RE.sub(" ", text)).replace("\n", " ")


class Normalizer:
    """Applies the enabled steps in a fixed order. Idempotent: normalizing twice changes nothing."""

    def __init__(self, settings: NormalizeSettings | None = None) -> None:
        self.settings = s = settings or NormalizeSettings()
        converter = opencc.OpenCC("t2s") if s.traditional_to_simplified else None
        flags = 0 if s.lowercase else re.I
        decorations = tuple(  # in this order: a URL goes whole before the "@" or "#" in it
            re.compile(pattern, flags)
            for enabled, patterns in (
                (s.retweets, _RETWEET), (s.retweets, _FORWARD), (s.urls, _URL),
                (s.mentions, _MENTION), (s.tags, _TAGS), (s.emoticons, _BRACKET_TAG),
            )
            if enabled
            for pattern in patterns
        )
        steps: list[Callable[[str], str]] = []
        if s.nfkc:
            steps.append(nfkc)
        if converter is not None:
            steps.append(converter.convert)
        if s.lowercase:
            steps.append(str.lower)
        steps.extend(partial(pattern.sub, " ") for pattern in decorations)
        keep = PARAGRAPH_BREAK if s.paragraphs else ""
        if s.symbols:
            steps.append(partial(re.compile(_NOT_CONTENT.format(keep=keep)).sub, ""))
            steps.append(_drop_underscores)
        else:
            steps.append(partial(re.compile(_SPACES.format(keep=keep)).sub, " "))
        if s.paragraphs:
            steps.append(_tidy_breaks)
        self._steps = tuple(steps)
        self._newline = PARAGRAPH_BREAK if s.paragraphs else " "

    def normalize(self, text: str) -> str:
        return self.normalize_batch([text])[0]

    def normalize_batch(self, texts: Sequence[str]) -> list[str]:
        """Normalize every text; the same result as one at a time."""
        lines = [t.replace("\n", self._newline) if "\n" in t else t for t in texts]
        if self.settings.markup:
            lines = [_strip_markup(t) for t in lines]
        joined = "\n".join(lines)
        for step in self._steps:
            joined = step(joined)
        out = joined.split("\n")
        if len(out) != len(texts):  # a step produced or ate a newline: fall back, one by one
            out = [self._one(t) for t in lines]
        return out if self.settings.symbols else [t.strip() for t in out]

    def _one(self, line: str) -> str:
        for step in self._steps:
            line = step(line)
        return line.replace("\n", " ")
