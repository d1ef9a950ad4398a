"""What a batch of normalized texts is looked up and posted under in the index, computed in one
place for the engine, its expiry and the global scope's fingerprint stage, so all three agree.

- fingerprint rows (the configured strategy) for the block tables;
- winnowing anchors (`fingerprint.anchors`): two texts sharing a run of ngram + window - 1
  characters share one; a message is posted under its `anchors_stored` smallest (a bottom-k
  sample) and looks up all;
- for short texts, **bigram anchors**: a text of 8-20 characters with one or two changed
  characters shares no run long enough for a winnowing anchor, but most of its character
  bigrams. A text up to `short_chars` long is posted under its `anchors_stored` smallest bigrams
  and looks up all of them; a text up to half again as long looks up its smallest (twice as
  many), so a short text wrapped in a repost chain or a comment still finds it;
- for very short texts, **one-deletion keys**: the text itself and each text one character
  shorter (SymSpell's deletion neighbourhood), posted and looked up: two texts of a few
  characters one edit apart (a particle added, a character changed) share a key, where they may
  share no bigram.

Each kind of key is hashed into its own domain, so keys of two kinds never meet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import xxhash

from ..config import FingerprintSettings, IndexSettings
from . import fingerprint as fpr
from . import scope

_U64 = np.uint64
_BIGRAM_DOMAIN = _U64(0x5DEECE66D2B7E151)
_DELETION_DOMAIN = _U64(0x27BB2EE687B0B0FD)
_NONE = np.zeros(0, _U64)


# The families of anchors, in the order a message's anchors are listed: each family has its own
# share of shared keys that makes a candidate (`verdict.anchor_need`).
WINNOWED, BIGRAM, DELETION = range(3)
FAMILIES = 3


@dataclass(frozen=True, slots=True)
class Features:
    """Index keys of a batch of messages (salted with each message's scope salt)."""

    fps: np.ndarray  # fingerprint rows
    owner: np.ndarray  # the message of each row, ascending
    anchors: list[np.ndarray]  # per message: every anchor it looks up, family by family, each
    # family ascending
    families: np.ndarray  # (messages, FAMILIES): how many anchors of each family a message has
    posted: np.ndarray  # (messages, FAMILIES): under how many of each family's smallest it is
    # posted

    def posted_anchors(self, i: int) -> np.ndarray:
        """The anchors message i is posted under."""
        ends = self.families[i].cumsum()
        return np.concatenate([self.anchors[i][end - count:end - count + posted]
                               for count, end, posted
                               in zip(self.families[i], ends, self.posted[i], strict=True)])


def features(texts: Sequence[str], salts: np.ndarray, strategy: fpr.Strategy,
             fingerprint: FingerprintSettings, index: IndexSettings) -> Features:
    """The index keys of non-empty normalized texts."""
    fps, owner = strategy(texts)
    families = np.zeros((len(texts), FAMILIES), np.int64)
    if not index.anchors:
        fps, empty = scope.apply(salts, fps, owner, [_NONE] * len(texts))
        return Features(fps, owner, empty, families, families.copy())
    batch = fpr.Batch.of(texts)
    winnowed = fpr.anchors(batch, fingerprint.anchor_ngram, fingerprint.anchor_window)
    bigrams = _bigram_anchors(texts, index.short_chars, 2 * index.anchors_stored)
    deletions = _deletion_keys(texts, index.very_short_chars)
    anchors = winnowed
    families[:, WINNOWED] = np.fromiter(map(len, winnowed), np.int64, count=len(texts))
    for i in {*bigrams, *deletions}:  # the few short texts: their other families after
        anchors[i] = np.concatenate([winnowed[i], bigrams.get(i, _NONE), deletions.get(i, _NONE)])
        families[i, BIGRAM] = len(bigrams.get(i, _NONE))
        families[i, DELETION] = len(deletions.get(i, _NONE))
    lengths = np.fromiter(map(len, texts), np.int64, count=len(texts))
    stored = index.anchors_stored or np.iinfo(np.int64).max
    posted = np.minimum(families, stored)
    posted[lengths > index.short_chars, BIGRAM] = 0  # bigrams posted by short texts only
    posted[:, DELETION] = families[:, DELETION]
    fps, anchors = scope.apply(salts, fps, owner, anchors)
    return Features(fps, owner, anchors, families, posted)


def _bigram_anchors(texts: Sequence[str], short_chars: int,
                    longer: int) -> dict[int, np.ndarray]:
    """Distinct character bigram hashes, ascending, of each text up to half again as long as
    `short_chars`, by its index: all of a short text's, the `longer` smallest of a longer one's
    (a short text inside it posted its own smallest bigrams, which are among the smallest of the
    longer text's too: a bottom-k sample of a superset keeps the bottom of the subset)."""
    short = [i for i, t in enumerate(texts) if 1 < len(t) <= short_chars * 3 // 2]
    if not short:
        return {}
    grams = fpr.anchors(fpr.Batch.of([texts[i] for i in short]), 2, 1)
    out = {}
    for i, g in zip(short, grams, strict=True):
        keys = np.sort(fpr.mix64(g ^ _BIGRAM_DOMAIN))
        out[i] = keys if len(texts[i]) <= short_chars or not longer else keys[:longer]
    return out


def _deletion_keys(texts: Sequence[str], very_short_chars: int) -> dict[int, np.ndarray]:
    """Hashes, ascending, of each text up to `very_short_chars` + 1 long and of its
    one-deletion variants (distinct; a text one longer reaches the shorter text itself), by its
    index."""
    out = {}
    for i, t in enumerate(texts):
        if 1 < len(t) <= very_short_chars + 1:
            variants = {t} | {t[:k] + t[k + 1:] for k in range(len(t))}
            hashes = np.fromiter((xxhash.xxh3_64_intdigest(v.encode()) for v in variants), _U64,
                                 count=len(variants))
            out[i] = np.sort(fpr.mix64(hashes ^ _DELETION_DOMAIN))
    return out
