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

Where the removed punctuation ended a clause is kept beside the text (`Normalizer.with_clauses`:
offsets into the normalized text), never in it: the text that is hashed, fingerprinted and
compared is the same either way, and the meaning check can tell a clause moved from two words
that trade places inside one.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Callable, Sequence
from functools import partial, reduce

import numpy as np
import numpy.typing as npt
import opencc

from ..config import NormalizeSettings
from .lines import code_points, splice
from .simplify import Simplifier

# A batch is normalized as one string, its texts joined by newlines, so every step runs once per
# batch in C (regex, NFKC, OpenCC) instead of once per message. No pattern below may match "\n".

# Markup scraped from web pages: tags and character references (decoded before anything else
# so that "&#65292;" does not leave digits behind). A tag is "<", an element name (or "/" and
# one, or "!" for comments and doctypes) and then its end or a space before its attributes: a "<"
# that opens no tag ("3<5", an escaped "<p&gt;") never takes the text up to some later ">" with
# it. References are decoded, then tags stripped once more: escaped markup ("&lt;p&gt;") is
# markup too.
_TAG_RE = re.compile(r"<(?:/?[a-zA-Z][a-zA-Z0-9-]{0,20}(?:[\s/][^<>\n]{0,200})?|![^<>\n]{0,200})>")
# Retweet-chain and reply markers ("//@name:", "回复@name:"). Only the markers go: which segment
# of a chain is the content differs between platforms, so the segments' words stay and the
# near stage's containment measure weighs a short added comment against the reposted text.
# Each pattern starts with a literal or a character set, so the regex engine can skip ahead to
# candidate positions (one alternation of them all was 3x slower).
_RETWEET = (r"[转轉](?:[发發])?[ \t]*(?=//[ \t]*@)",  # a forward with no words of its own: 转//@a:
            r"//[ \t]*@[^:：\s]{1,30}[ \t]*[:：]", r"回[复覆][ \t]*@[^:：\s]{1,30}[ \t]*[:：]")
# The text a platform fills in when a post is forwarded without words of its own. "repost" is
# the word \brepost\b written literal first (the lookbehind is the leading \b), so the regex
# engine looks for the literal, not for a word boundary at every character.
_FORWARD = (r"[转轉][发發]微博", r"repost\b(?<!\wrepost)",
            # a repost's lead marker: 转：, 转载：, 转自@name：, 【转】 (the tags step takes that)
            r"(?m)^[ \t]*[转轉](?:[自载載发發])?[ \t]*(?:@[^:：\s]{1,30})?[ \t]*[:：]",
            # the client line a platform adds to a post: via 微博客户端, 来自iPhone客户端
            r"via[ \t]*[^\s，。,!?！？]{1,20}?客户端", r"来自[ \t]*[^\s，。,!?！？]{1,20}?客户端",
            # a source line in brackets: （来源：新浪网）
            r"[（(][ \t]*来源[ \t]*[:：][^）)\n]{1,20}[）)]")
_NOT_URL = r"[^\s\u3000-\u303f\uff00-\uffef\u4e00-\u9fff]+"
# Short links ("t.cn/x"): the one pattern that starts with a character class, so the regex engine
# tries it at every letter and digit. Each match holds the literal part and no newline, so only
# the lines holding the literal part are searched.
_SHORT_LINK_CORE = r"\.(?:cn|com|net|org|ly|me|io|gl|im)/"
_SHORT_LINK = r"[a-z0-9-]{1,20}" + _SHORT_LINK_CORE + r"[a-z0-9_\-/]+"
_URL = (r"https?://" + _NOT_URL, r"www\." + _NOT_URL, _SHORT_LINK)
_MENTION = (r"@[\w\u00b7\-]{1,30}",)
# Topic tags "#…#" and lenticular-bracket tags "【…】"; square-bracket spans are emoticons
# ("[哈哈]") or source tags ("[转载]"): short, no nested brackets.
_TAGS = (r"#[^#\n]{1,40}#", r"【[^【】\n]{0,40}】", r"〖[^〖〗\n]{0,40}〗",
         # a truncation marker in brackets: （未完）, (未完待续), [待续]
         r"[（(\[]\s{0,2}(?:未完待续|未完|待续)\s{0,2}[）)\]]")
_BRACKET_TAG = (r"\[[^\[\]\n]{1,10}\]",)
# Of every decoration pattern, literals one of which each of its matches holds: a line holding
# none of the enabled patterns' literals is left as it is by every decoration step (`_decorate`).
_LITERALS = {
    _RETWEET[0]: ("转", "轉"), _RETWEET[1]: ("//",), _RETWEET[2]: ("回复", "回覆"),
    _FORWARD[0]: ("转", "轉"), _FORWARD[1]: ("repost",), _FORWARD[2]: ("转", "轉"),
    _FORWARD[3]: ("via",), _FORWARD[4]: ("来自",), _FORWARD[5]: ("来源",),
    _URL[0]: ("//",), _URL[1]: ("www.",), _SHORT_LINK: ("/",), _MENTION[0]: ("@",),
    _TAGS[0]: ("#",), _TAGS[1]: ("【",), _TAGS[2]: ("〖",), _TAGS[3]: ("未完", "待续"),
    _BRACKET_TAG[0]: ("[",),
}
_SPACES = r"[^\S\n{keep}]+"
# Between paragraphs when `paragraphs` is on (U+2029 PARAGRAPH SEPARATOR: never content, never
# the newline that joins a batch). Runs collapse to one; none is left at either end of a text.
PARAGRAPH_BREAK = "\u2029"
_BREAK_RUN_RE = re.compile(r"[^\S\n]*\u2029[^\S\n]*")
_EDGE_BREAK_RE = re.compile(r"^\u2029|\u2029$", re.M)
# Marks that end a clause or sentence, in the forms NFKC leaves and those it folds (with `nfkc`
# off): comma, enumeration comma, full stop, semicolon, colon, exclamation and question marks,
# ellipsis, and the tilde that ends sentences in chat (好的亲~). Between two digits a mark is part
# of a number (9.5, 1,000, 10:30), not a clause end. Not spaces: word-spaced text has them
# between the words of one clause.
_CLAUSE_MARKS = ",.;:!?~\u3001\u3002\u2026\uff0c\uff0e\uff1b\uff1a\uff01\uff1f\uff5e\uff61\uff64"

Clauses = tuple[int, ...]  # offsets in a normalized text where a clause ends, inside the text
Normalized = tuple[list[str], list[Clauses]]  # a batch's texts and their clause ends


# The lookup tables below cover the BMP: a lookup clips a code point beyond it to U+FFFF (a
# noncharacter: not alphanumeric, NFKC keeps it), then the few such characters of a batch (emoji)
# are set right one by one.
_BMP = 0x10000


def _text(codes: npt.NDArray[np.uint32]) -> str:
    return codes.tobytes().decode("utf-32-le", "surrogatepass")


def _nfkc_table() -> dict[int, str]:
    """NFKC of every BMP character it changes."""
    table = {}
    for code in range(_BMP):
        if 0xD800 <= code < 0xE000:
            continue  # surrogates
        ch = chr(code)
        mapped = unicodedata.normalize("NFKC", ch)
        if mapped != ch:
            table[code] = mapped
    return table


def _single_forms(table: dict[int, str]) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.bool_]]:
    """The table as arrays over the BMP: each code point's form where that is one character (the
    code point itself where NFKC keeps it), and whether the form is longer ("…" is "...")."""
    single = np.arange(_BMP, dtype=np.uint32)
    longer = np.zeros(_BMP, dtype=bool)
    for code, form in table.items():
        if len(form) == 1:
            single[code] = ord(form)
        else:
            longer[code] = True
    return single, longer


_NFKC_TABLE = _nfkc_table()
_NFKC_SINGLE, _NFKC_LONGER = _single_forms(_NFKC_TABLE)


def _per_character_nfkc(text: str) -> str:
    """`text.translate(_NFKC_TABLE)`: a numpy lookup of the forms of one character, then the few
    longer forms ("…") joined in: one array operation a text, not a regex and a translation per
    run of table characters."""
    codes = code_points(text)
    single = _NFKC_SINGLE.take(codes, mode="clip")
    beyond = np.flatnonzero(codes >= _BMP)
    single[beyond] = codes[beyond]  # not in the table: left to the check in nfkc()
    text = _text(single)
    longer = np.flatnonzero(_NFKC_LONGER.take(codes, mode="clip")).tolist()
    if not longer:
        return text
    pieces: list[str] = []
    start = 0
    for at in longer:
        pieces += (text[start:at], _NFKC_TABLE[ord(text[at])])
        start = at + 1
    pieces.append(text[start:])
    return "".join(pieces)


def nfkc(text: str) -> str:
    """NFKC, fast: each character is replaced by its own NFKC form, then the rare string that is
    still not normalized (combining sequences, characters beyond the BMP) is normalized whole.
    NFKC of the per-character forms equals NFKC of the original, so the result is exact."""
    text = _per_character_nfkc(text)
    return text if unicodedata.is_normalized("NFKC", text) else unicodedata.normalize("NFKC", text)


# Whether each BMP character is a letter or digit: str.isalnum, which is the regex class \w less
# "_". ~4 ms at import.
_BMP_ALNUM = np.fromiter(
    map(str.isalnum, _text(np.arange(_BMP, dtype=np.uint32))), dtype=bool, count=_BMP
)


def _content_table(keep: str) -> npt.NDArray[np.bool_]:
    """Which BMP characters the symbols step keeps: letters and digits, the newline between the
    texts of a batch, and `keep` (BMP characters)."""
    table = _BMP_ALNUM.copy()
    table[[ord(ch) for ch in "\n" + keep]] = True
    return table


def _keep_content(table: npt.NDArray[np.bool_], text: str) -> str:
    """Delete every character but those of `table` (and letters and digits beyond the BMP): what
    deleting "[^\\w\\n]+" and then "_" by regex does, in one array operation."""
    codes = code_points(text)
    return _text(codes[_kept(table, codes)])


def _kept(table: npt.NDArray[np.bool_], codes: npt.NDArray[np.uint32]) -> npt.NDArray[np.bool_]:
    """Which of `codes` the symbols step keeps: those of `table`, letters and digits beyond the
    BMP."""
    kept = table.take(codes, mode="clip")
    beyond = np.flatnonzero(codes >= _BMP)
    kept[beyond] = [chr(code).isalnum() for code in codes[beyond].tolist()]
    return kept


_CLAUSE_TABLE = np.zeros(_BMP, dtype=bool)
_CLAUSE_TABLE[[ord(ch) for ch in _CLAUSE_MARKS]] = True
_DIGIT_TABLE = np.zeros(_BMP, dtype=bool)
_DIGIT_TABLE[[ord(ch) for ch in "0123456789"]] = True


def _content_and_clauses(table: npt.NDArray[np.bool_], text: str,
                         count: int) -> tuple[str, list[Clauses]]:
    """`_keep_content(table, text)`, and where the clauses of each of the `count` newline-joined
    texts of `text` end in the result: offsets into each text, each strictly inside it (an edge
    ends a clause anyway), a run of marks one end. Array operations over the whole batch (the
    marks are looked for among the few characters the step deletes), then a slice for each text
    that has any."""
    codes = code_points(text)
    kept = _kept(table, codes)
    content = _text(codes[kept])
    out: list[Clauses] = [()] * count
    dropped = np.flatnonzero(~kept)
    marked = np.flatnonzero(_CLAUSE_TABLE.take(codes[dropped], mode="clip"))
    if not len(marked):
        return content, out
    at = dropped[marked]
    number = (_DIGIT_TABLE.take(codes.take(at - 1, mode="clip"), mode="clip")
              & _DIGIT_TABLE.take(codes.take(at + 1, mode="clip"), mode="clip") & (at > 0))
    at, marked = at[~number], marked[~number]  # 9.5, 1,000: a number's own mark
    newlines = np.flatnonzero(codes == 10)
    breaks = newlines - np.searchsorted(dropped, newlines)  # where each is in the result
    owner = np.searchsorted(newlines, at)  # which text each mark is in
    starts = np.concatenate(([0], breaks + 1))[owner]
    lengths = np.concatenate((breaks, [len(content)]))[owner] - starts
    local = at - marked - starts  # characters kept before the mark, in its text
    inside = (local > 0) & (local < lengths)
    inside[1:] &= (local[1:] != local[:-1]) | (owner[1:] != owner[:-1])  # a run of marks
    owner, flat = owner[inside], local[inside].tolist()
    if not flat:
        return content, out
    bounds = [0, *(np.flatnonzero(owner[1:] != owner[:-1]) + 1).tolist(), len(flat)]
    for first, last, text_of in zip(bounds, bounds[1:], owner[bounds[:-1]].tolist(),
                                    strict=False):
        out[text_of] = tuple(flat[first:last])
    return content, out


def _remover(pattern: str, flags: int) -> Callable[[str], str]:
    """The step replacing every match of `pattern` by a space."""
    regex = re.compile(pattern, flags)
    remove = partial(regex.sub, " ")
    if pattern == _SHORT_LINK:  # only the lines holding a link's core are searched
        return partial(_decorate, re.compile(_SHORT_LINK_CORE, flags), (remove,))
    return remove


def _decorations(patterns: Sequence[str], flags: int) -> Callable[[str], str]:
    """The step removing every match of each of `patterns` in turn (`_decorate`)."""
    trigger = "|".join(re.escape(literal) for literal in sorted(
        {literal for pattern in patterns for literal in _LITERALS[pattern]}))
    return partial(_decorate, re.compile(trigger, flags),
                   tuple(_remover(pattern, flags) for pattern in patterns))


def _decorate(trigger: re.Pattern[str], removers: tuple[Callable[[str], str], ...],
              text: str) -> str:
    """Every remover in turn, on the lines holding a match of `trigger` (a literal of some
    decoration pattern, `_LITERALS`): a line holding none is left as it is by all of them, and
    most lines hold none. The lines are joined as the batch is; a match that takes the newline
    between two of them (none should) sends each through the removers alone."""
    starts, ends = [], []
    at = 0
    while (found := trigger.search(text, at)) is not None:  # then on from the next line
        starts.append(text.rfind("\n", 0, found.start()) + 1)
        end = text.find("\n", found.end())
        ends.append(len(text) if end < 0 else end)
        at = ends[-1] + 1
    if not starts:
        return text
    chosen = [text[a:b] for a, b in zip(starts, ends, strict=True)]
    joined = "\n".join(chosen)
    for remove in removers:
        joined = remove(joined)
    out = joined.split("\n")
    if len(out) != len(chosen):
        out = [reduce(lambda line, remove: remove(line), removers, line) for line in chosen]
    return splice(text, starts, ends, out)


def _tidy_breaks(text: str) -> str:
    return _EDGE_BREAK_RE.sub("", _BREAK_RUN_RE.sub(PARAGRAPH_BREAK, text))


def _strip_markup(text: str) -> str:
    if "<" not in text and "&" not in text:
        return text
    text = html.unescape(_TAG_RE.sub(" ", text))
    return _TAG_RE.sub(" ", text).replace("\n", " ") if "<" in text else text.replace("\n", " ")


class Normalizer:
    """Applies the enabled steps in a fixed order. Idempotent: normalizing twice changes nothing."""

    def __init__(self, settings: NormalizeSettings | None = None) -> None:
        self.settings = s = settings or NormalizeSettings()
        converter = opencc.OpenCC("t2s") if s.traditional_to_simplified else None
        flags = 0 if s.lowercase else re.I
        decorations = tuple(  # in this order: a URL goes whole before the "@" or "#" in it
            pattern
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
            steps.append(Simplifier(converter))
        if s.lowercase:
            steps.append(str.lower)
        if decorations:
            steps.append(_decorations(decorations, flags))
        keep = PARAGRAPH_BREAK if s.paragraphs else ""
        # Clause ends are read where the symbols step deletes the marks; with paragraphs kept,
        # the breaks tidied after it would move them, so there are none.
        self._table = _content_table(keep)
        self._clauses_at = None if s.paragraphs or not s.symbols else len(steps)
        if s.symbols:
            steps.append(partial(_keep_content, self._table))
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
        return self._run(texts, None)

    def with_clauses(self, texts: Sequence[str]) -> Normalized:
        """`normalize_batch`, and where each text's clauses end (`Clauses`: none when the
        symbols step is off, punctuation then being kept, or paragraph breaks are kept)."""
        clauses: list[Clauses] = [()] * len(texts)
        return self._run(texts, clauses), clauses

    def _run(self, texts: Sequence[str], clauses: list[Clauses] | None) -> list[str]:
        """Normalize every text; fill `clauses` in, when given, with their clause ends."""
        lines = [t.replace("\n", self._newline) if "\n" in t else t for t in texts]
        if self.settings.markup:
            lines = [_strip_markup(t) for t in lines]
        joined = "\n".join(lines)
        for n, step in enumerate(self._steps):
            if n == self._clauses_at and clauses is not None:
                joined, clauses[:] = _content_and_clauses(self._table, joined, len(texts))
            else:
                joined = step(joined)
        out = joined.split("\n")
        if len(out) != len(texts):  # a step produced or ate a newline: fall back, one by one
            out = [self._one(t, clauses, n) for n, t in enumerate(lines)]
        return out if self.settings.symbols else [t.strip() for t in out]

    def _one(self, line: str, clauses: list[Clauses] | None, at: int) -> str:
        for n, step in enumerate(self._steps):
            if n == self._clauses_at and clauses is not None and "\n" not in line:
                line, (clauses[at],) = _content_and_clauses(self._table, line, 1)
            else:
                line = step(line)
        return line.replace("\n", " ")
