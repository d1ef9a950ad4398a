"""The detectors a user would otherwise reach for, used the way their libraries document.

They are the yardstick in `stream-dedup eval --compare`, so each one gets the library's own fast
path and the setup that reproduces the figures published with the dev stream: a weakened anchor
would flatter us.

Both follow the usual dedup recipe: look the message up among the messages kept so far, flag it if
anything comes back, and otherwise keep it (index it). Duplicates are not indexed, as a filter
drops them.

datasketch and simhash are dev extras, imported only when an anchor is made.
"""

from __future__ import annotations

import importlib
import logging
import unicodedata
from collections.abc import Sequence
from types import ModuleType

from stream_dedup.errors import StreamDedupError
from stream_dedup.records import Message

_NUM_PERM = 128
_NGRAM = 3
_SIMHASH_K = 3


def _require(module: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise StreamDedupError(
            f"the anchors need the '{module}' package, a dev extra: pip install -e '.[dev]'"
        ) from exc


def _char_ngrams(text: str) -> list[bytes]:
    """Character 3-grams after NFKC, lowercase and letters/digits only, as UTF-8.

    Dropping punctuation, spaces and symbols before shingling is what reproduces the bench's
    published MinHashLSH figures; a text shorter than a gram is one gram.
    """
    kept = "".join(c for c in unicodedata.normalize("NFKC", text).lower() if c.isalnum())
    if len(kept) <= _NGRAM:
        return [kept.encode()] if kept else []
    return [kept[i : i + _NGRAM].encode() for i in range(len(kept) - _NGRAM + 1)]


class MinHashLSHDetector:
    """datasketch MinHashLSH over character 3-grams, 128 permutations.

    Two ways to build the MinHashes, both datasketch's documented usage, same flags:
    - per message (the default rows `datasketch-0.4`/`-0.5`): `MinHash(num_perm=128)` and
      `update_batch` of its grams, as datasketch's README shows it. This is the anchor published
      with the dev stream, and it reproduces its quality figures exactly.
    - `bulk` (rows `-bulk`): `MinHash.generator`, which sets the permutations up once for many
      sets: datasketch's fast path for many sets, shown beside so our speed is also measured
      against the quickest datasketch there is.
      `fast_hash` adds xxh32, the faster hash datasketch's docs suggest (slightly different
      figures) instead of the default SHA-1.
    The LSH keys are arrival numbers, unique by construction.
    """

    def __init__(self, threshold: float, bulk: bool = False, fast_hash: bool = False) -> None:
        datasketch = _require("datasketch")
        self.name = (f"datasketch-{threshold:g}" + ("-bulk" if bulk else "")
                     + ("-xxh32" if fast_hash else ""))
        self._bulk = bulk
        self._hash = {"hashfunc": _require("xxhash").xxh32_intdigest} if fast_hash else {}
        self._minhash = datasketch.MinHash
        self._lsh = datasketch.MinHashLSH(threshold=threshold, num_perm=_NUM_PERM)
        self._next_key = 0

    def flags(self, batch: Sequence[Message]) -> list[bool]:
        grams = [_char_ngrams(message.text) for message in batch]
        return [self._flag(minhash) for minhash in (
            self._minhash.generator(grams, num_perm=_NUM_PERM, **self._hash) if self._bulk
            else map(self._one, grams))]

    def _one(self, grams: list[bytes]) -> object:
        minhash = self._minhash(num_perm=_NUM_PERM, **self._hash)
        minhash.update_batch(grams)
        return minhash

    def _flag(self, minhash: object) -> bool:
        duplicate = bool(self._lsh.query(minhash))
        if not duplicate:
            self._lsh.insert(self._next_key, minhash, check_duplication=False)
            self._next_key += 1
        return duplicate


class SimhashPackageDetector:
    """The `simhash` package (1e0ng): `Simhash` of jieba words, `SimhashIndex` with k=3.

    Words are `jieba.lcut` of the raw text without whitespace-only tokens (the package weighs
    every token equally, and runs of spaces would dominate short texts).
    """

    name = "simhash-pkg"

    def __init__(self) -> None:
        simhash = _require("simhash")
        self._jieba = _require("jieba")
        self._jieba.initialize()  # load the dictionary now, not inside the first timed batch
        # The index warns on every query that meets a bucket over 200 entries; one line per
        # message on stderr would cost the anchor time without telling anyone anything.
        quiet = logging.getLogger(f"{__name__}.simhash")
        quiet.setLevel(logging.ERROR)
        self._simhash = simhash.Simhash
        self._index = simhash.SimhashIndex([], k=_SIMHASH_K, log=quiet)
        self._next_key = 0

    def flags(self, batch: Sequence[Message]) -> list[bool]:
        result = []
        for message in batch:
            words = [word for word in self._jieba.lcut(message.text) if word.strip()]
            fingerprint = self._simhash(words)
            duplicate = bool(self._index.get_near_dups(fingerprint))
            if not duplicate:
                self._index.add(str(self._next_key), fingerprint)
                self._next_key += 1
            result.append(duplicate)
        return result
