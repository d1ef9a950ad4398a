"""Corpus statistics the weighted strategies read, and the file `stream-dedup fit` writes.

* document frequency n_t of every word over N documents: IDF = lg(N/n_t + 0.01) (000 formula 3,
  003). A word the corpus never saw counts as seen in one document.
* co-occurrence J(x, y) of 000's formula 5 for the word pairs that met among some document's
  top m words (the only pairs P-Simhash ever damps); any other pair has J = 0.
* left and right entropy of every word's neighbours (E-Simhash's weights); a word the corpus
  never saw gets the median, the least committal guess.

The file is a NumPy .npz (no pickles) with a JSON header naming its format and version, so a
file from another version is refused with a message instead of being misread.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...errors import ConfigError

FORMAT = "stream-dedup corpus statistics"
VERSION = 1
_KEY = "fingerprint.stats"
_ARRAYS = ("words", "df", "left_entropy", "right_entropy", "pair_keys", "pair_jaccard")


@dataclass(frozen=True)
class CorpusStats:
    """Fitted statistics, never empty (`fit` refuses a corpus without words). `pair_keys` are
    sorted ``(i << 32) | j`` with word ids i < j."""

    docs: int
    words: np.ndarray  # str, word id -> word
    df: np.ndarray  # int64, documents containing each word
    left_entropy: np.ndarray  # float64, nats
    right_entropy: np.ndarray
    pair_keys: np.ndarray  # uint64, sorted
    pair_jaccard: np.ndarray  # float64, J of each pair
    top_m: int
    _ids: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_ids", {w: i for i, w in enumerate(self.words.tolist())})

    def ids(self, ws: Sequence[str]) -> np.ndarray:
        """Word ids (int64), -1 for words the corpus never saw."""
        get = self._ids.get
        return np.fromiter((get(w, -1) for w in ws), dtype=np.int64, count=len(ws))

    def idf(self, ids: np.ndarray) -> np.ndarray:
        """lg(N/n_t + 0.01) of each word; an unseen word has n_t = 1."""
        n = np.where(ids >= 0, self.df[np.maximum(ids, 0)], 1)
        return np.log10(self.docs / n + 0.01)

    def entropy(self, ids: np.ndarray) -> np.ndarray:
        """Mean of each word's left and right neighbour entropy; unseen words get the median."""
        both = (self.left_entropy + self.right_entropy) / 2
        return np.where(ids >= 0, both[np.maximum(ids, 0)], np.median(both))

    def jaccard(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """J(a[k], b[k]) for each k; 0 for unseen words and pairs never fitted."""
        if not len(self.pair_keys):
            return np.zeros(len(a))
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        keys = (lo.astype(np.uint64) << np.uint64(32)) | hi.astype(np.uint64)
        pos = np.minimum(np.searchsorted(self.pair_keys, keys), len(self.pair_keys) - 1)
        found = (lo >= 0) & (lo != hi) & (self.pair_keys[pos] == keys)
        return np.where(found, self.pair_jaccard[pos], 0.0)

    def save(self, path: str | Path) -> None:
        header = {"format": FORMAT, "version": VERSION, "docs": self.docs, "top_m": self.top_m}
        with open(path, "wb") as out:
            np.savez_compressed(out, header=np.array(json.dumps(header)),
                                **{name: getattr(self, name) for name in _ARRAYS})


def load(path: str | Path) -> CorpusStats:
    """Read a statistics file, or raise ConfigError naming `fingerprint.stats` and the problem."""
    try:
        with np.load(path, allow_pickle=False) as data:
            header = json.loads(str(data["header"]))
            if header.get("format") != FORMAT or header.get("version") != VERSION:
                raise _bad(path, f"not {FORMAT} version {VERSION} (rerun `stream-dedup fit`)")
            arrays = {name: data[name] for name in _ARRAYS}
    except OSError as exc:
        raise _bad(path, exc.strerror or str(exc)) from None
    except (KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise _bad(path, f"not a statistics file ({exc})") from None
    return CorpusStats(docs=int(header["docs"]), top_m=int(header["top_m"]), **arrays)


def _bad(path: str | Path, problem: str) -> ConfigError:
    return ConfigError(_KEY, f"cannot use '{path}': {problem}",
                       "a file written by `stream-dedup fit INPUT -o STATS`")
