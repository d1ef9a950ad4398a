"""What a batch of normalized texts is looked up and posted under in the index, computed in one
place for the engine, its expiry and the global scope's fingerprint stage, so all three agree.

- fingerprint rows (the configured strategy) for the block tables;
- winnowing anchors (`fingerprint.anchors`): two texts sharing a run of ngram + window - 1
  characters share one; a message is posted under its `anchors_stored` smallest (a bottom-k
  sample) and looks up all;
- for short texts, **bigram anchors**: a text of 8-20 characters with one or two changed
  characters shares no run long enough for a winnowing anchor, but most of its character
  bigrams. A text up to `short_chars` long is posted under its `anchors_stored` smallest bigrams
  and looks up all of them; a text up to twice that long looks them up too, so a short text
  wrapped in a repost chain or a comment still finds it;
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

from . import fingerprint as fpr
from . import scope
from .config import FingerprintSettings, IndexSettings

_U64 = np.uint64
_BIGRAM_DOMAIN = _U64(0x5DEECE66D2B7E151)
_DELETION_DOMAIN = _U64(0x27BB2EE687B0B0FD)
_NONE = np.zeros(0, _U64)


# The families of anchors, in the order a message's anchors are listed: each family has its own
# share of shared keys that makes a candidate (`decide.anchor_need`).
WINNOWED, BIGRAM, DELETION = range(3)
FAMILIES = 3


@dataclass(frozen=True, slots=True)
class Features:
    """Index keys of a batch of messages (salted with each message's scope salt)."""

    fps: np.ndarray  # fingerprint rows
    owner: np.ndarray  # the message of each row, ascending
    anchors: list[np.ndarray]  # per message: every anchor it looks up, family by family
    posted: list[np.ndarray]  # per message: a mask over its anchors, those it is posted under
    families: np.ndarray  # (messages, FAMILIES): how many anchors of each family a message has


def features(texts: Sequence[str], salts: np.ndarray, strategy: fpr.Strategy,
             fingerprint: FingerprintSettings, index: IndexSettings) -> Features:
    """The index keys of non-empty normalized texts."""
    fps, owner = strategy(texts)
    families = np.zeros((len(texts), FAMILIES), np.int64)
    if not index.anchors:
        empty = [_NONE] * len(texts)
        return Features(*scope.apply(salts, fps, owner, empty), [_NONE.astype(bool)] * len(texts),
                        families)
    batch = fpr.Batch.of(texts)
    winnowed = fpr.anchors(batch, fingerprint.anchor_ngram, fingerprint.anchor_window)
    bigrams = _bigram_anchors(texts, index.short_chars)
    deletions = _deletion_keys(texts, index.very_short_chars)
    stored = index.anchors_stored
    anchors, posted = [], []
    for i, (text, w, b, d) in enumerate(zip(texts, winnowed, bigrams, deletions, strict=True)):
        families[i] = len(w), len(b), len(d)
        anchors.append(np.concatenate([w, b, d]) if len(b) or len(d) else w)
        posted.append(np.concatenate([_bottom(len(w), stored),
                                      _bottom(len(b), stored) if len(text) <= index.short_chars
                                      else np.zeros(len(b), bool),
                                      np.ones(len(d), bool)]))
    fps, anchors = scope.apply(salts, fps, owner, anchors)
    return Features(fps, owner, anchors, posted, families)


def _bottom(count: int, stored: int) -> np.ndarray:
    """The mask of the `stored` smallest of `count` ascending keys (all when stored is 0)."""
    mask = np.ones(count, bool)
    if stored:
        mask[stored:] = False
    return mask


def _bigram_anchors(texts: Sequence[str], short_chars: int) -> list[np.ndarray]:
    """Distinct character bigram hashes, ascending, of each text up to twice `short_chars` long
    (none for longer texts)."""
    out = [_NONE] * len(texts)
    if not short_chars:
        return out
    short = [i for i, t in enumerate(texts) if 1 < len(t) <= 2 * short_chars]
    if short:
        grams = fpr.anchors(fpr.Batch.of([texts[i] for i in short]), 2, 1)
        for i, g in zip(short, grams, strict=True):
            out[i] = np.sort(fpr.mix64(g ^ _BIGRAM_DOMAIN))
    return out


def _deletion_keys(texts: Sequence[str], very_short_chars: int) -> list[np.ndarray]:
    """Hashes of each text up to `very_short_chars` + 1 long and of its one-deletion variants
    (distinct; a text one longer reaches the shorter text itself)."""
    out = [_NONE] * len(texts)
    for i, t in enumerate(texts):
        if 1 < len(t) <= very_short_chars + 1:
            variants = {t} | {t[:k] + t[k + 1:] for k in range(len(t))}
            hashes = np.fromiter((xxhash.xxh3_64_intdigest(v.encode()) for v in variants), _U64,
                                 count=len(variants))
            out[i] = np.sort(fpr.mix64(hashes ^ _DELETION_DOMAIN))
    return out
