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
    values: np.ndarray  # every anchor each message looks up, message by message, family by
    # family, each family ascending: message i's are values[ends[i]:ends[i + 1]]
    ends: np.ndarray
    families: np.ndarray  # (messages, FAMILIES): how many anchors of each family a message has
    posted: np.ndarray  # (messages, FAMILIES): under how many of each family's smallest it is
    # posted

    @property
    def anchors(self) -> list[np.ndarray]:
        """Per message, the anchors it looks up (slices of `values`)."""
        return fpr.runs(self.values, self.ends)

    def posted_anchors(self, i: int) -> np.ndarray:
        """The anchors message i is posted under."""
        own = self.values[self.ends[i]:self.ends[i + 1]]
        ends = self.families[i].cumsum()
        return np.concatenate([own[end - count:end - count + posted] for count, end, posted
                               in zip(self.families[i], ends, self.posted[i], strict=True)])


def features(texts: Sequence[str], salts: np.ndarray, strategy: fpr.Strategy,
             fingerprint: FingerprintSettings, index: IndexSettings) -> Features:
    """The index keys of non-empty normalized texts."""
    fps, owner = strategy(texts)
    families = np.zeros((len(texts), FAMILIES), np.int64)
    if not index.anchors:
        fps, none = scope.apply(salts, fps, owner, _NONE, families)
        return Features(fps, owner, none, np.zeros(len(texts) + 1, np.int64), families,
                        families.copy())
    lengths = np.fromiter(map(len, texts), np.int64, count=len(texts))
    # Each family as (values, ends) over the whole batch, text t's keys values[ends[t]:ends[t+1]]
    parts = (fpr.anchor_runs(fpr.Batch.of(texts), fingerprint.anchor_ngram,
                             fingerprint.anchor_window),
             _bigram_anchors(texts, lengths, index.short_chars, 2 * index.anchors_stored),
             _deletion_keys(texts, lengths, index.very_short_chars))
    for family, (_, ends) in enumerate(parts):
        families[:, family] = np.diff(ends)
    # the few short texts: their other families after
    values, ends = fpr.joined_runs(parts) if families[:, 1:].any() else parts[WINNOWED]
    stored = index.anchors_stored or np.iinfo(np.int64).max
    posted = np.minimum(families, stored)
    posted[lengths > index.short_chars, BIGRAM] = 0  # bigrams posted by short texts only
    posted[:, DELETION] = families[:, DELETION]
    fps, values = scope.apply(salts, fps, owner, values, families)
    return Features(fps, owner, values, ends, families, posted)


def _bigram_anchors(texts: Sequence[str], lengths: np.ndarray, short_chars: int,
                    longer: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct character bigram hashes, ascending, of each text up to half again as long as
    `short_chars` (none of the others'): all of a short text's, the `longer` smallest of a
    longer one's (a short text inside it posted its own smallest bigrams, which are among the
    smallest of the longer text's too: a bottom-k sample of a superset keeps the bottom of the
    subset). (values, ends) as `fingerprint.anchor_runs` gives them."""
    short = np.flatnonzero((lengths > 1) & (lengths <= short_chars * 3 // 2))
    counts = np.zeros(len(texts) + 1, np.int64)
    if not len(short):
        return _NONE, counts
    grams, ends = fpr.anchor_runs(fpr.Batch.of([texts[i] for i in short.tolist()]), 2, 1)
    own = lengths[short]  # more than its bigrams: all of them
    keep = own if not longer else np.where(own <= short_chars, own, longer)
    values, ends = fpr.mixed_runs(grams, ends, _BIGRAM_DOMAIN, keep)
    counts[short + 1] = np.diff(ends)
    return values, counts.cumsum()


def _deletion_keys(texts: Sequence[str], lengths: np.ndarray,
                   very_short_chars: int) -> tuple[np.ndarray, np.ndarray]:
    """Hashes, ascending, of each text up to `very_short_chars` + 1 long and of its
    one-deletion variants (distinct; a text one longer reaches the shorter text itself), none
    of the others'. (values, ends) as `fingerprint.anchor_runs` gives them."""
    counts = np.zeros(len(texts) + 1, np.int64)
    found = []
    for i in np.flatnonzero((lengths > 1) & (lengths <= very_short_chars + 1)).tolist():
        t = texts[i]
        variants = {t} | {t[:k] + t[k + 1:] for k in range(len(t))}
        hashes = np.fromiter((xxhash.xxh3_64_intdigest(v.encode()) for v in variants), _U64,
                             count=len(variants))
        found.append(np.sort(fpr.mix64(hashes ^ _DELETION_DOMAIN)))
        counts[i + 1] = len(variants)
    return (np.concatenate(found) if found else _NONE), counts.cumsum()
