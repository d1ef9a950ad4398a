"""Normalization made for Chinese feeds.

Two texts that say the same thing on a feed differ by decoration far more often than by wording:
a retweet chain, an @mention, a #topic# or 【tag】, a short link, an emoticon, full-width digits,
traditional script, punctuation. Each class of decoration is one step here, switched in config
(`normalize.*`). Rules name classes of decoration (a bracketed short tag, a URL, a code point
category), never strings seen in any one feed.

The result keeps letters and digits only: punctuation, symbols and spacing carry no content for
dedup, and feeds rewrite them freely (a decimal point "9.5" retyped as "9。5" or dropped).
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import opencc

# Markup scraped from web pages: tags and character references (decoded before anything else
# so that "&#65292;" does not leave digits behind).
_TAG_RE = re.compile(r"<[a-zA-Z/!][^<>]{0,200}>")
# Retweet-chain and reply markers ("//@name:", "回复@name:"). Only the markers go: which segment
# of a chain is the content differs between platforms, so the segments' words stay and the
# near stage's containment measure weighs a short added comment against the reposted text.
_RETWEET_RE = re.compile(r"(?://|回复|回覆)\s*@[^:：\s]{1,30}\s*[:：]", re.I)
# The text a platform fills in when a post is forwarded without words of its own.
_FORWARD_RE = re.compile(r"转发微博|轉發微博|\brepost\b", re.I)
_MENTION_RE = re.compile(r"@[\w\u00b7\-]{1,30}")
# Topic tags "#…#" and lenticular-bracket tags "【…】"; square-bracket spans are emoticons
# ("[哈哈]") or source tags ("[转载]"): short, no nested brackets.
_HASHTAG_RE = re.compile(r"#[^#\n]{1,40}#")
_LENTICULAR_RE = re.compile(r"【[^【】\n]{0,40}】|〖[^〖〗\n]{0,40}〗")
_BRACKET_TAG_RE = re.compile(r"\[[^\[\]\n]{1,10}\]")
_URL_RE = re.compile(
    r"(?:https?://|www\.)[^\s\u3000-\u303f\uff00-\uffef\u4e00-\u9fff]+"
    r"|\b[a-z0-9-]{1,20}\.(?:cn|com|net|org|ly|me|io|gl|im)/[a-z0-9_\-/]+",
    re.I,
)

_KEEP_CATEGORIES = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Nd", "Nl", "No"})


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


def _strip_markup(text: str) -> str:
    return html.unescape(_TAG_RE.sub(" ", text))


def _keep_content(text: str) -> str:
    """Keep letters and digits only."""
    cat = unicodedata.category
    return "".join(ch for ch in text if cat(ch) in _KEEP_CATEGORIES)


class Normalizer:
    """Applies the enabled steps in a fixed order. Idempotent: normalizing twice changes nothing."""

    def __init__(self, settings: NormalizeSettings | None = None) -> None:
        self.settings = s = settings or NormalizeSettings()
        self._converter = opencc.OpenCC("t2s") if s.traditional_to_simplified else None
        steps: list[Callable[[str], str]] = []
        if s.markup:
            steps.append(_strip_markup)
        if s.nfkc:
            steps.append(lambda t: unicodedata.normalize("NFKC", t))
        if self._converter is not None:
            steps.append(self._converter.convert)
        if s.lowercase:
            steps.append(str.lower)
        if s.retweets:
            steps.append(lambda t: _FORWARD_RE.sub(" ", _RETWEET_RE.sub(" ", t)))
        if s.urls:  # before mentions and tags: a URL may hold "@" or "#"
            steps.append(lambda t: _URL_RE.sub(" ", t))
        if s.mentions:
            steps.append(lambda t: _MENTION_RE.sub(" ", t))
        if s.tags:
            steps.append(lambda t: _LENTICULAR_RE.sub(" ", _HASHTAG_RE.sub(" ", t)))
        if s.emoticons:
            steps.append(lambda t: _BRACKET_TAG_RE.sub(" ", t))
        if s.symbols:
            steps.append(_keep_content)
        else:
            steps.append(lambda t: " ".join(t.split()))
        self._steps = tuple(steps)

    def normalize(self, text: str) -> str:
        for step in self._steps:
            text = step(text)
        return text

    def normalize_batch(self, texts: Sequence[str]) -> list[str]:
        return [self.normalize(t) for t in texts]
