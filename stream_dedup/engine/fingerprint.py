"""Fingerprints of a batch of normalized texts, computed by compiled kernels (numba).

Two things per text:

* a **64-bit Simhash** (Charikar; seeds 002) over character n-grams: each feature's 64-bit hash
  votes +1/-1 on every bit, bit i is set where the votes are positive. Similar texts get
  fingerprints a few bits apart, so block tables can find them without a pairwise scan.
* **winnowing anchors** (Schleimer, Wilkerson, Aiken 2003): the minimum hash of every window of
  `window` consecutive n-gram hashes. Two texts that share any run of ``ngram + window - 1``
  characters share an anchor. On short texts a few typos, a cut or an added comment move a
  Simhash by more bits than any useful k (measured on the dev stream: 4x16-bit tables find 70%
  of the non-identical copies); the anchors find those pairs, and verification decides.

The whole batch is one concatenated array of code points, hashed a chunk of whole texts at a time
(`_chunk_hashes`); votes, window minima and their sorting then run text by text, all in one
kernel call per batch: a vectorized numpy pass per step, and a sort of all the batch's anchors,
would cost several times as much. tests/property/test_fingerprint_props.py checks every
fingerprint and anchor against the plain definitions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Protocol

import numpy as np

from .jit import compiled

_U64 = np.uint64
_GOLDEN = _U64(0x9E3779B97F4A7C15)
_MIX1, _MIX2 = _U64(0xBF58476D1CE4E5B9), _U64(0x94D049BB133111EB)
_LANE_BOTTOMS = _U64(0x0101010101010101)  # bit 0 of each 8-bit lane of a uint64
_LANE = _U64(0xFF)
_LANE_FEATURES = 255  # features summed in 8-bit lanes before a lane could overflow
_CHUNK_CODES = 1 << 14  # code points of a chunk of whole texts (`_chunks`)
_SHORT_SORT = 128  # values sorted by insertion; more, by numba's sort (`_winnow`)


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: a fast, well-mixed, stable 64-bit hash of uint64 values."""
    z = np.array(x, dtype=_U64, order="C")  # a copy, mixed in place
    _mix_each(z.reshape(-1))
    return z


@compiled
def mix(z: np.uint64) -> np.uint64:
    """`mix64` of one value."""
    z += _GOLDEN
    z = (z ^ (z >> _U64(30))) * _MIX1
    z = (z ^ (z >> _U64(27))) * _MIX2
    return z ^ (z >> _U64(31))


@compiled
def _mix_each(z: np.ndarray) -> None:
    """`mix64` of every value of a 1-d uint64 array, in place."""
    for i in range(len(z)):
        z[i] = mix(z[i])


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
    A gram's hash folds its code points in order: h = mix64(h ^ c), from h = 0."""
    return _ngram_hashes(batch.codes, batch.offsets, n)


def simhash(batch: Batch, n: int = 1) -> np.ndarray:
    """64-bit Simhash of each text (uint64) over its `ngram_hashes`; an empty text gets 0."""
    return _simhashes(batch.codes, batch.offsets, n)


def anchors(batch: Batch, n: int, window: int) -> list[np.ndarray]:
    """Winnowing anchors of each text, ascending: the distinct minima of every `window`
    consecutive n-gram hashes (a text with fewer n-grams than a window gets its single minimum)."""
    return runs(*anchor_runs(batch, n, window))


def anchor_runs(batch: Batch, n: int, window: int) -> tuple[np.ndarray, np.ndarray]:
    """`anchors` in one array: (values, ends), text t's being values[ends[t]:ends[t + 1]]."""
    values, ends = _anchors(batch.codes, batch.offsets, n, window)
    return values[: ends[-1]], ends


def runs(values: np.ndarray, ends: np.ndarray) -> list[np.ndarray]:
    """The runs values[ends[t]:ends[t + 1]] (slices: np.split is 4x slower)."""
    return [values[a:b] for a, b in pairwise(ends.tolist())]


def mixed_runs(values: np.ndarray, ends: np.ndarray, domain: np.uint64,
               keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`mix64(run ^ domain)` of each run of distinct values, ascending, cut to its first
    `keep[t]`: (values, ends) as `anchor_runs` gives them. One kernel call for a batch of runs,
    not numpy calls run by run."""
    return _mixed_runs(values, ends, _U64(domain), keep)


def joined_runs(parts: tuple[tuple[np.ndarray, np.ndarray], ...]) -> tuple[np.ndarray, np.ndarray]:
    """Each text's runs of every part, one after the other: (values, ends) of the parts' runs
    (values, ends) joined text by text."""
    values = np.concatenate([v for v, _ in parts])
    ends = np.stack([e for _, e in parts])
    return _joined_runs(values, ends, np.array([len(v) for v, _ in parts], np.int64).cumsum())


def warm_up() -> None:
    """Compile the kernels now rather than inside the first batch: ~8 s, or ~0.04 s loaded from
    numba's cache (once numba is loaded)."""
    batch = Batch.of(["ab", "c"])
    simhash(batch)
    anchors(batch, 2, 2)
    ngram_hashes(batch, 2)
    mix64(np.zeros(1, _U64))
    values, ends = anchor_runs(batch, 2, 1)
    joined_runs(((values, ends), mixed_runs(values, ends, _U64(1), np.ones(2, np.int64))))


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


@compiled
def _features(offsets: np.ndarray, t: int, n: int) -> int:
    """How many n-gram hashes text t has: one a gram, or one for a text shorter than a gram."""
    size = offsets[t + 1] - offsets[t]
    return max(size - n + 1, min(size, 1))


@compiled
def _chunks(offsets: np.ndarray) -> tuple[np.ndarray, int]:
    """(the first text of each chunk, then the text count; the most code points of a chunk). A
    chunk is whole texts of at most _CHUNK_CODES code points together (or one longer text), so
    the kernels' scratch arrays stay in cache: over a whole batch at once the anchors cost 2.5x
    as much (dev stream: 63k code points a batch; long-text stream: 650k)."""
    count = len(offsets) - 1
    firsts = np.zeros(count + 1, np.int64)
    chunks = room = 0
    while firsts[chunks] < count:
        first = firsts[chunks]
        stop = first + 1
        while stop < count and offsets[stop + 1] - offsets[first] <= _CHUNK_CODES:
            stop += 1
        room = max(room, offsets[stop] - offsets[first])
        chunks += 1
        firsts[chunks] = stop
    return firsts[: chunks + 1], room


@compiled
def _chunk_hashes(codes: np.ndarray, offsets: np.ndarray, first: int, stop: int, n: int,
                  out: np.ndarray) -> None:
    """The n-gram hashes of texts first..stop-1 into out: text t's at out[offsets[t] -
    offsets[first]:][:_features(offsets, t, n)]. The grams are folded one position at a time
    over the whole chunk, a loop of independent mixes the compiler vectorizes, where folding one
    gram after another would chain every mix on the last."""
    base = offsets[first]
    size = offsets[stop] - base
    grams = max(size - n + 1, 0)  # grams that straddle two texts are computed, never read
    out[:size] = 0
    for i in range(n):
        column = codes[base + i : base + i + grams]
        for p in range(grams):
            out[p] = mix(out[p] ^ column[p])
    for t in range(first, stop):
        begin, end = offsets[t], offsets[t + 1]
        if 0 < end - begin < n:  # shorter than a gram: the whole text, folded the same way
            h = _U64(0)
            for c in codes[begin:end]:
                h = mix(h ^ c)
            out[begin - base] = h


@compiled
def _own(chunk: np.ndarray, offsets: np.ndarray, first: int, t: int, size: int) -> np.ndarray:
    """`size` values of text t in a chunk's array that begins with text `first`."""
    begin = offsets[t] - offsets[first]
    return chunk[begin : begin + size]


@compiled
def _ngram_hashes(codes: np.ndarray, offsets: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """`ngram_hashes`: (hashes, owners)."""
    count = len(offsets) - 1
    total = 0
    for t in range(count):
        total += _features(offsets, t, n)
    hashes = np.empty(total, _U64)
    owners = np.empty(total, np.int64)
    firsts, room = _chunks(offsets)
    chunk = np.empty(room, _U64)
    k = 0
    for c in range(len(firsts) - 1):
        _chunk_hashes(codes, offsets, firsts[c], firsts[c + 1], n, chunk)
        for t in range(firsts[c], firsts[c + 1]):
            # One by one: slice assignments took numba 3.5 s more to compile.
            for h in _own(chunk, offsets, firsts[c], t, _features(offsets, t, n)):
                hashes[k] = h
                owners[k] = t
                k += 1
    return hashes, owners


@compiled
def _simhashes(codes: np.ndarray, offsets: np.ndarray, n: int) -> np.ndarray:
    """`simhash`."""
    count = len(offsets) - 1
    fps = np.zeros(count, _U64)
    firsts, room = _chunks(offsets)
    chunk = np.empty(room, _U64)
    ones = np.empty(64, _U64)
    for c in range(len(firsts) - 1):
        _chunk_hashes(codes, offsets, firsts[c], firsts[c + 1], n, chunk)
        for t in range(firsts[c], firsts[c + 1]):
            fps[t] = _simhash_of(_own(chunk, offsets, firsts[c], t, _features(offsets, t, n)),
                                 ones)
    return fps


@compiled
def _simhash_of(hashes: np.ndarray, ones: np.ndarray) -> np.uint64:
    """Simhash of one text's feature hashes: bit i set where more than half of them have it
    (`ones`: scratch for the 64 counts). Eight bits share a uint64 in 8-bit lanes, bits j, j + 8,
    ..., j + 56 of every hash summed at once, 255 hashes at a time so no lane overflows: eight
    vectorized sums per text, ~0.8 ns a hash, instead of 64 counts per hash, ~4.4 ns."""
    ones[:] = 0
    for start in range(0, len(hashes), _LANE_FEATURES):
        part = hashes[start : start + _LANE_FEATURES]
        for j in range(8):
            lanes = _U64(0)
            for q in range(len(part)):
                lanes += (part[q] >> _U64(j)) & _LANE_BOTTOMS
            for lane in range(8):
                ones[8 * lane + j] += (lanes >> _U64(8 * lane)) & _LANE
    half = _U64(len(hashes) // 2)  # more than half: more than its floor, counts being whole
    fp = _U64(0)
    for bit in range(64):
        if ones[bit] > half:
            fp |= _U64(1) << _U64(bit)
    return fp


@compiled
def _anchors(codes: np.ndarray, offsets: np.ndarray, n: int,
             window: int) -> tuple[np.ndarray, np.ndarray]:
    """(values, ends): text t's anchors are values[ends[t]:ends[t + 1]]."""
    count = len(offsets) - 1
    values = np.empty(len(codes), _U64)  # at most one anchor per feature, one per code point
    ends = np.zeros(count + 1, np.int64)
    firsts, room = _chunks(offsets)
    chunk, spare, other = np.empty(room, _U64), np.empty(room, _U64), np.empty(room, _U64)
    k = 0
    for c in range(len(firsts) - 1):
        first, stop = firsts[c], firsts[c + 1]
        _chunk_hashes(codes, offsets, first, stop, n, chunk)
        minima = _window_minima(chunk[: offsets[stop] - offsets[first]], window, spare, other)
        for t in range(first, stop):
            size = _features(offsets, t, n)
            if size >= window:
                k += _winnow(_own(minima, offsets, first, t, size - window + 1), values[k:])
            elif size:  # fewer hashes than a window: their minimum (not .min(): ~2 s to compile)
                values[k] = _own(chunk, offsets, first, t, size)[0]
                for h in _own(chunk, offsets, first, t, size):
                    values[k] = min(values[k], h)
                k += 1
            ends[t + 1] = k
    return values, ends


@compiled
def _window_minima(values: np.ndarray, window: int, spare: np.ndarray,
                   other: np.ndarray) -> np.ndarray:
    """minima[p] = min(values[p:p + window]) for every p <= len(values) - window, in spare or
    other (values itself for a window of 1), by doubling: log2(window) vectorized passes, each
    into a different array than it reads (the compiler does not vectorize an array updated in
    place at an unknown distance)."""
    minima, span = values, 1
    while 2 * span <= window:  # minima[p] = min(values[p : p + 2 * span])
        minima = _pairwise_min(minima, span, spare)
        spare, other = other, spare
        span *= 2
    if span < window:  # two overlapping spans of `span` cover the window
        minima = _pairwise_min(minima, window - span, spare)
    return minima


@compiled
def _pairwise_min(values: np.ndarray, gap: int, out: np.ndarray) -> np.ndarray:
    ahead = values[gap:]
    for p in range(len(ahead)):
        out[p] = min(values[p], ahead[p])
    return out[: len(ahead)]


@compiled
def _winnow(minima: np.ndarray, out: np.ndarray) -> int:
    """The distinct values of one text's window minima, ascending, into out; returns how many.
    Neighbouring windows mostly share their minimum: the repeats go before sorting. numba's sort
    builds a partition stack per call, 3x slower than an insertion sort on the ~13 anchors of a
    60-character text; it overtakes it at 128-192 values."""
    size = 1
    out[0] = minima[0]
    for p in range(1, len(minima)):
        out[size] = minima[p]
        size += minima[p] != minima[p - 1]
    found = out[:size]
    if size > _SHORT_SORT:
        found.sort()
    else:
        for i in range(1, size):
            x = found[i]
            j = i
            while j > 0 and found[j - 1] > x:
                found[j] = found[j - 1]
                j -= 1
            found[j] = x
    distinct = 1
    for i in range(1, size):
        found[distinct] = found[i]
        distinct += found[i] != found[distinct - 1]
    return distinct


@compiled
def _mixed_runs(values: np.ndarray, ends: np.ndarray, domain: np.uint64,
                keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`mixed_runs`: mixed, sorted by insertion (runs of a short text: a few dozen values)."""
    out = np.empty(len(values), _U64)
    out_ends = np.zeros(len(ends), np.int64)
    k = 0
    for t in range(len(ends) - 1):
        start = k
        for p in range(ends[t], ends[t + 1]):
            x = mix(values[p] ^ domain)
            j = k
            while j > start and out[j - 1] > x:
                out[j] = out[j - 1]
                j -= 1
            out[j] = x
            k += 1
        k = min(k, start + keep[t])
        out_ends[t + 1] = k
    return out[:k], out_ends


@compiled
def _joined_runs(values: np.ndarray, ends: np.ndarray,
                 bases: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`joined_runs`: part q's runs are values[bases[q - 1]:][ends[q, t]:ends[q, t + 1]]."""
    out = np.empty(len(values), _U64)
    out_ends = np.zeros(ends.shape[1], np.int64)
    k = 0
    for t in range(ends.shape[1] - 1):
        for q in range(ends.shape[0]):
            base = bases[q - 1] if q else 0
            for p in range(base + ends[q, t], base + ends[q, t + 1]):
                out[k] = values[p]
                k += 1
        out_ends[t + 1] = k
    return out[:k], out_ends
