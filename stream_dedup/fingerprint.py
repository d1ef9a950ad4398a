"""Fingerprints of a batch of normalized texts, computed in numpy.

Two things per text:

* a **64-bit Simhash** (Charikar; seeds 002) over character n-grams: each feature's 64-bit hash
  votes +1/-1 on every bit, bit i is set where the votes are positive. Similar texts get
  fingerprints a few bits apart, so block tables can find them without a pairwise scan.
* **winnowing anchors** (Schleimer, Wilkerson, Aiken 2003): the minimum hash of every window of
  `window` consecutive n-gram hashes. Two texts that share any run of ``ngram + window - 1``
  characters share an anchor. On short texts a few typos, a cut or an added comment move a
  Simhash by more bits than any useful k (measured on the dev stream: 4x16-bit tables find 70%
  of the non-identical copies); the anchors find those pairs, and verification decides.

The whole batch is one concatenated array of code points; n-gram hashes, votes and window minima
are computed for all texts at once and split by offsets. No Python loop runs per bit or feature.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Protocol

import numpy as np

_U64 = np.uint64
_GOLDEN = _U64(0x9E3779B97F4A7C15)


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: a fast, well-mixed, stable 64-bit hash of uint64 values."""
    z = x.astype(_U64)  # a copy, mixed in place
    _mix_in_place(z, np.empty_like(z))
    return z


def _mix_in_place(z: np.ndarray, scratch: np.ndarray) -> None:
    """`mix64` of uint64 array z, into z (scratch: an array of its shape). In place: a fresh
    array for each of the ten steps cost twice as much as the arithmetic. Integer arrays wrap
    around silently (numpy checks overflow only on scalars), so no np.errstate: its ~1.5 us a
    call was five times a batch."""
    z += _GOLDEN
    for shift, factor in ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB)):
        np.right_shift(z, _U64(shift), out=scratch)
        z ^= scratch
        z *= _U64(factor)
    np.right_shift(z, _U64(31), out=scratch)
    z ^= scratch


@dataclass(frozen=True, slots=True)
class Batch:
    """Code points of a batch of texts, concatenated: text j is codes[offsets[j]:offsets[j+1]]."""

    codes: np.ndarray  # uint64
    offsets: np.ndarray  # int64, len = texts + 1

    @classmethod
    def of(cls, texts: Sequence[str]) -> Batch:
        joined = "".join(texts).encode("utf-32-le")
        codes = np.frombuffer(joined, dtype="<u4").astype(_U64)
        lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return cls(codes, offsets)

    @property
    def lengths(self) -> np.ndarray:
        return self.offsets[1:] - self.offsets[:-1]


class Strategy(Protocol):
    """How a batch of messages is fingerprinted for the block tables (`fingerprint.strategy`).

    Returns (fingerprints, owner): one or more 64-bit fingerprints per normalized text (a
    strategy that fingerprints paragraphs gives several), and for each the index of its text in
    the batch, non-decreasing. The result must depend on each text alone: expiry recomputes it
    from the stored normalized text to find the entries to remove.
    """

    name: str

    def __call__(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]: ...


@dataclass(frozen=True, slots=True)
class CharSimhash:
    """The default: Simhash over character n-grams of the normalized text, one per message.
    Character unigrams move least under typos on short texts (see the module docstring)."""

    ngram: int = 1
    name: str = "char-simhash"

    def __call__(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        return simhash(Batch.of(texts), self.ngram), np.arange(len(texts))


def ngram_hashes(batch: Batch, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Hashes of every character n-gram that lies inside one text, and each one's text index,
    ordered by text. A text shorter than n contributes one feature: the hash of the whole text.
    """
    codes, offsets, lengths = batch.codes, batch.offsets, batch.lengths
    count = len(offsets) - 1
    owner = np.arange(count).repeat(lengths)
    if n == 1:
        return mix64(codes), owner
    h = np.zeros(max(len(codes) - n + 1, 0), dtype=_U64)
    scratch = np.empty_like(h)
    for i in range(n):  # n is tiny: one vector operation per position in the gram
        h ^= codes[i : len(h) + i]
        _mix_in_place(h, scratch)
    start = np.arange(len(h))
    inside = start + n <= offsets[owner[: len(h)] + 1] if len(h) else np.zeros(0, bool)
    hashes, owners = h[inside], owner[: len(h)][inside]
    short = np.flatnonzero(lengths < n) if n > 1 else np.zeros(0, np.int64)
    short = short[lengths[short] > 0]
    if len(short):
        whole = np.zeros(len(short), dtype=_U64)
        for i in range(n - 1):  # fold the (fewer than n) characters the same way as a gram
            pos = offsets[short] + i
            has = pos < offsets[short + 1]
            whole[has] = mix64(whole[has] ^ codes[pos[has]])
        hashes = np.concatenate([hashes, whole])
        owners = np.concatenate([owners, short])
        order = owners.argsort(kind="stable")
        hashes, owners = hashes[order], owners[order]
    return hashes, owners


def simhash(batch: Batch, n: int = 1) -> np.ndarray:
    """64-bit Simhash of each text (uint64); an empty text gets 0."""
    hashes, owners = ngram_hashes(batch, n)
    count = len(batch.offsets) - 1
    totals = np.bincount(owners, minlength=count)
    votes = 2 * _bit_counts(hashes, owners, totals) - totals[:, None]
    packed = np.packbits(votes > 0, axis=1, bitorder="little")
    return packed.view("<u8").reshape(count).astype(_U64)


_CHUNK_FEATURES = 1 << 14


def _bit_counts(hashes: np.ndarray, owners: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """(texts, 64): how many of each text's hashes have each bit set; owners non-decreasing,
    `totals` the hashes of each text. Several bits share a uint64 in lanes of `width` bits: row
    j of the shifted hashes holds bits j, j + width, ..., so one reduceat over `width` contiguous
    rows sums all 64 (10x faster than summing a (features, 64) array of unpacked bits down its
    rows), and one shift per lane unpacks them (an assignment per lane was most of a small
    batch's Simhash). Lanes are as narrow as the most features of one text allow (a lane must
    not overflow). Texts go in chunks of ~16k features: the (width, features) temporaries stay
    in cache and on reused memory (a whole batch's were tens of MB, freshly mapped each batch,
    at twice the cost), and one long text widens the lanes of its own chunk only."""
    ones = np.zeros((len(totals), 64), dtype=np.int64)
    if not len(owners):
        return ones
    starts = run_starts(owners).nonzero()[0]
    bounds = [0, len(starts)]  # one chunk: the common case of a small batch
    if len(owners) > _CHUNK_FEATURES:  # chunks begin at the text holding every 16k-th feature
        first = np.searchsorted(starts, np.arange(0, len(owners), _CHUNK_FEATURES), "right") - 1
        bounds = np.unique(np.append(first, len(starts))).tolist()
    for a, b in pairwise(bounds):
        lo, texts = int(starts[a]), owners[starts[a:b]]
        hi = int(starts[b]) if b < len(starts) else len(owners)
        width = next(w for w in (8, 16, 32) if int(totals[texts].max()) < 1 << w)
        shifts, low_bits, lanes, lane_mask = _LANES[width]
        sums = np.add.reduceat((hashes[None, lo:hi] >> shifts) & low_bits, starts[a:b] - lo,
                               axis=1)
        per_lane = (sums >> lanes) & lane_mask  # (lane, bit, text)
        ones[texts] = per_lane.transpose(2, 0, 1).reshape(b - a, 64)
    return ones


# Per lane width: the shifts that bring each bit of a lane to its bottom, the mask of the lanes'
# bottom bits, the lanes' offsets (shaped for (lane, bit, text)) and a lane's mask.
_LANES = {
    width: (np.arange(width, dtype=_U64)[:, None],
            _U64(sum(1 << lane for lane in range(0, 64, width))),
            np.arange(0, 64, width, dtype=_U64)[:, None, None],
            _U64((1 << width) - 1))
    for width in (8, 16, 32)
}


def run_starts(*columns: np.ndarray) -> np.ndarray:
    """True where a run of equal rows of the (sorted) columns begins. Cheaper than building the
    mask with np.r_ (or np.ones), whose overhead outweighs the comparison on a small batch."""
    starts = np.empty(len(columns[0]), dtype=bool)
    if len(starts):
        starts[0] = True
        same = columns[0][1:] == columns[0][:-1]
        for column in columns[1:]:
            same &= column[1:] == column[:-1]
        np.logical_not(same, out=starts[1:])
    return starts


def _window_minima(values: np.ndarray, window: int) -> np.ndarray:
    """Minimum of every `window` consecutive values (len(values) >= window), by doubling:
    log2(window) vectorized minimums instead of a (len, window) sliding view."""
    minima, span = values, 1
    while 2 * span <= window:  # minima[i] = min(values[i : i + 2 * span])
        minima = np.minimum(minima[:-span], minima[span:])
        span *= 2
    count = len(values) - window + 1
    if span < window:  # two overlapping spans of `span` cover the window
        minima = np.minimum(minima[:count], minima[window - span : window - span + count])
    return minima[:count]


def anchors(batch: Batch, n: int, window: int) -> list[np.ndarray]:
    """Winnowing anchors of each text, ascending: the distinct minima of every `window`
    consecutive n-gram hashes (a text with fewer n-grams than a window gets its single minimum)."""
    hashes, owners = ngram_hashes(batch, n)
    count = len(batch.offsets) - 1
    if not count:
        return []
    per_text = np.bincount(owners, minlength=count)
    bounds = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(per_text, out=bounds[1:])
    values, owned_by = [np.zeros(0, _U64)], [np.zeros(0, np.int64)]
    if len(hashes) >= window:
        minima = _window_minima(hashes, window)
        win_owner = owners[: len(minima)]
        whole = bounds[win_owner + 1] - np.arange(len(minima)) >= window
        minima, win_owner = minima[whole], win_owner[whole]
        # Neighbouring windows mostly share their minimum: drop the repeats before sorting.
        fresh = run_starts(minima, win_owner)
        values.append(minima[fresh])
        owned_by.append(win_owner[fresh])
    nonempty = np.flatnonzero(per_text > 0)
    short = per_text[nonempty] < window
    if short.any():
        values.append(np.minimum.reduceat(hashes, bounds[nonempty])[short])
        owned_by.append(nonempty[short])
    value, owner = np.concatenate(values), np.concatenate(owned_by)
    # (owner, value) ascending: the values sorted, then a stable sort of their owners, a radix
    # sort on 16-bit keys where the batch allows: twice as fast as np.lexsort((value, owner)).
    order = value.argsort()
    keys = owner[order]
    order = order[np.argsort(keys.astype(np.uint16) if count <= 1 << 16 else keys, kind="stable")]
    value, owner = value[order], owner[order]
    fresh = run_starts(value, owner)
    value, owner = value[fresh], owner[fresh]
    ends = np.searchsorted(owner, np.arange(1, count)).tolist()  # slices: np.split is 4x slower
    return [value[a:b] for a, b in zip([0, *ends], [*ends, len(value)], strict=True)]
