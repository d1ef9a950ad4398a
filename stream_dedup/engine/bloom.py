"""Rolling Bloom filter of the exact stage, and a plain one (`Bloom`) of the anchors posted.

The filter is the fast "definitely new" path: a miss means the exact key was not seen within
the window; a hit is only "probably seen" and the caller confirms it against the exact record
in RocksDB, so a false positive costs one lookup and never a wrong verdict.

The window is covered by `generations` Bloom filters of equal span. Time is event time: the
newest generation is the one of the newest timestamp seen, and a timestamp in a later
generation rotates the ring, zeroing the generations that fall out of the window. A key added
at time t is therefore remembered while `now - t < (generations - 1) * span`, i.e. at least
`window_s` and at most `window_s * generations / (generations - 1)`.

Keys are 64-bit hashes computed by the caller (well mixed: the first probe is the key itself).
The k bit positions come from Kirsch–Mitzenmacher double hashing,
pos_i = (h1 + i * h2) mod m with h1 = key and h2 = splitmix64(key) forced odd.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from itertools import pairwise
from typing import Self

import numpy as np
import numpy.typing as npt

from .fingerprint import mix
from .jit import compiled

MAX_HASHES = 16
# Positions are computed as h1 + i * h2 on residues below m without wrapping: (1 + MAX_HASHES)
# * m must stay below 2**64.
MAX_BITS = 1 << 58

_SNAPSHOT_MAGIC = b"SDBF"
_SNAPSHOT_VERSION = 2  # 2: the bits stored apart from the header
# magic, version, bits_per_generation, hashes, generations, span_ms, has_newest, newest
_HEADER = struct.Struct("<4sHQHIQ?q")

_U64 = np.uint64


@dataclass(frozen=True, slots=True)
class BloomSizing:
    """Layout of a rolling Bloom filter.

    `bits_per_generation` (m), `hashes` (k), `generations` and `span_ms` fix the bit layout and
    must match for a snapshot to be restored; `keys_per_generation` (n) and `fp_rate` record the
    design point: with n keys in every live generation the false positive rate is `fp_rate`.
    """

    bits_per_generation: int
    hashes: int
    generations: int
    span_ms: int
    keys_per_generation: int
    fp_rate: float

    def __post_init__(self) -> None:
        if not 0 < self.bits_per_generation <= MAX_BITS or self.bits_per_generation % 64:
            raise ValueError(
                f"bits_per_generation must be a positive multiple of 64 up to 2**58, "
                f"got {self.bits_per_generation}"
            )
        if not 1 <= self.hashes <= MAX_HASHES:
            raise ValueError(f"hashes must be in [1, {MAX_HASHES}], got {self.hashes}")
        if self.generations < 2:
            raise ValueError(f"generations must be at least 2, got {self.generations}")
        if self.span_ms < 1:
            raise ValueError(f"span_ms must be at least 1, got {self.span_ms}")
        if self.keys_per_generation < 1:
            raise ValueError(
                f"keys_per_generation must be at least 1, got {self.keys_per_generation}"
            )
        if not 0.0 < self.fp_rate < 1.0:
            raise ValueError(f"fp_rate must be in (0, 1), got {self.fp_rate}")

    @classmethod
    def from_rate(
        cls, expected_rate_per_s: float, window_s: float, generations: int, fp_rate: float
    ) -> Self:
        """Size for `expected_rate_per_s` keys over `window_s` at overall FPR `fp_rate`.

        Each generation spans window_s / (generations - 1) (rounded up to whole milliseconds, so
        the window is never shorter than asked) and holds n = rate * span keys. A query checks
        every live generation, so each gets p = 1 - (1 - fp_rate)^(1/generations).
        """
        if not (math.isfinite(expected_rate_per_s) and expected_rate_per_s > 0):
            raise ValueError(
                f"expected_rate_per_s must be a positive finite number, got {expected_rate_per_s}"
            )
        if not (math.isfinite(window_s) and window_s > 0):
            raise ValueError(f"window_s must be a positive finite number, got {window_s}")
        if isinstance(generations, bool) or not isinstance(generations, int) or generations < 2:
            raise ValueError(f"generations must be an integer of at least 2, got {generations!r}")
        if not 0.0 < fp_rate < 1.0:
            raise ValueError(f"fp_rate must be in (0, 1), got {fp_rate}")
        span_ms = math.ceil(window_s * 1000.0 / (generations - 1))
        n = max(1, math.ceil(expected_rate_per_s * span_ms / 1000.0))
        m, k = _bits_and_hashes(n, -math.expm1(math.log1p(-fp_rate) / generations))
        return cls(
            bits_per_generation=m,
            hashes=k,
            generations=generations,
            span_ms=span_ms,
            keys_per_generation=n,
            fp_rate=fp_rate,
        )

    @property
    def words_per_generation(self) -> int:
        return self.bits_per_generation // 64

    @property
    def generation_fp_rate(self) -> float:
        """The FPR target of one generation holding `keys_per_generation` keys."""
        return -math.expm1(math.log1p(-self.fp_rate) / self.generations)


def _bits_and_hashes(keys: int, fp_rate: float) -> tuple[int, int]:
    """Bits (a multiple of 64) and hashes of a Bloom filter of `keys` keys at `fp_rate`."""
    m = math.ceil(-keys * math.log(fp_rate) / math.log(2) ** 2)
    m = -(-m // 64) * 64
    return m, min(MAX_HASHES, max(1, round(m / keys * math.log(2))))


class Bloom:
    """A Bloom filter of 64-bit hashes that never forgets, for `keys` of them at about
    `fp_rate`; `full` once more were added (a caller then stops asking it: its answers would be
    "maybe" ever more often). Blocked: all of a key's bits lie in one 64-byte line, picked by
    the key, so adding or looking up a key costs one memory access, not one a bit; the bits in
    the line come from `mix(key)`, 9 bits a probe. It starts sized for `_FIRST_KEYS` and grows
    fourfold whenever it holds what it was sized for (to its full size once that is an eighth
    of it), adding the keys again, kept until then: a filter read at random costs a cache miss
    a key once it outgrows the cache, so a run that adds few keys keeps a small one."""

    __slots__ = ("_added", "_fp_rate", "_hashes", "_kept", "_keys", "_lines", "_room")

    def __init__(self, keys: int, fp_rate: float) -> None:
        self._keys = keys
        self._fp_rate = fp_rate
        self._added = 0
        self._kept: list[npt.NDArray[np.uint64]] | None = []
        self._size_for(min(keys, _FIRST_KEYS))

    @property
    def full(self) -> bool:
        return self._added > self._keys

    @property
    def memory_bytes(self) -> int:
        return self._lines.nbytes

    def contains(self, keys: npt.NDArray[np.uint64]) -> npt.NDArray[np.bool_]:
        """Whether each key was probably added (certainly not, where False)."""
        return _in_lines(self._lines, keys, self._hashes)

    def add(self, keys: npt.NDArray[np.uint64]) -> None:
        """Add the keys (an array the caller leaves as it is: it may be kept)."""
        self._added += len(keys)
        if self._kept is not None:
            self._kept.append(keys)
            if self._added > self._room:
                room = self._room
                while room < self._added:
                    room *= 4
                if room >= self._keys // 8:  # the kept keys stay a few MB at most
                    room = self._keys
                self._size_for(min(self._keys, room))
                for kept in self._kept:
                    _set_in_lines(self._lines, kept, self._hashes)
                if self._room == self._keys:
                    self._kept = None
                return
        _set_in_lines(self._lines, keys, self._hashes)

    def _size_for(self, keys: int) -> None:
        m, hashes = _bits_and_hashes(keys, self._fp_rate)
        self._lines = np.zeros((-(-m // _LINE_BITS), _LINE_BITS // 64), dtype=np.uint64)
        self._hashes = min(hashes, _LINE_PROBES)
        self._room = keys


_FIRST_KEYS = 1 << 16
_LINE_BITS = 512  # a cache line
_LINE_PROBES = 7  # 9-bit positions in the line, taken from one 64-bit hash


@compiled
def _in_lines(lines: np.ndarray, keys: np.ndarray, hashes: int) -> np.ndarray:
    found = np.ones(len(keys), np.bool_)
    for i in range(len(keys)):
        line, bits = lines[keys[i] % _U64(len(lines))], mix(keys[i])
        for j in range(hashes):
            pos = (bits >> _U64(9 * j)) & _U64(_LINE_BITS - 1)
            if not line[pos >> _U64(6)] & (_U64(1) << (pos & _U64(63))):
                found[i] = False
                break
    return found


@compiled
def _set_in_lines(lines: np.ndarray, keys: np.ndarray, hashes: int) -> None:
    for i in range(len(keys)):
        line, bits = lines[keys[i] % _U64(len(lines))], mix(keys[i])
        for j in range(hashes):
            pos = (bits >> _U64(9 * j)) & _U64(_LINE_BITS - 1)
            line[pos >> _U64(6)] |= _U64(1) << (pos & _U64(63))


def _repeats(keys: npt.NDArray[np.uint64]) -> npt.NDArray[np.bool_]:
    """True where the key already occurred earlier in `keys`.

    A stable sort keeps equal keys in input order, so all but the first of each run repeat.
    """
    order = np.argsort(keys, kind="stable")
    ranked = keys[order]
    repeated = np.zeros(keys.size, dtype=bool)
    repeated[order[1:][ranked[1:] == ranked[:-1]]] = True
    return repeated


class RollingBloom:
    """A ring of `sizing.generations` Bloom filters over event time.

    Bits are one (generations, words) uint64 array; generation G lives in row G % generations.
    Batch calls behave like the same keys processed one at a time, in order, except that a key
    is never a false positive because of a *different* key of the same batch.
    """

    __slots__ = ("_bits", "_counted", "_newest", "_set_bits", "sizing")

    def __init__(self, sizing: BloomSizing) -> None:
        self.sizing = sizing
        self._bits = np.zeros((sizing.generations, sizing.words_per_generation), dtype=np.uint64)
        self._newest: int | None = None
        # Set bits of each row, counted as they are set: the fill is read without a pass over
        # the rows (tens of MB, most of them never touched). Recounted once after a restore,
        # whose caller fills the words.
        self._set_bits = np.zeros(sizing.generations, dtype=np.int64)
        self._counted = True

    def generation_of(self, ts_ms: int) -> int:
        """The generation a timestamp belongs to: floor(ts_ms / span_ms)."""
        return ts_ms // self.sizing.span_ms

    @property
    def newest_generation(self) -> int | None:
        """The generation of the newest timestamp seen, None before the first."""
        return self._newest

    @property
    def capacity(self) -> int:
        """Keys per generation at which the FPR target holds (the rate times one span)."""
        return self.sizing.keys_per_generation

    @property
    def memory_bytes(self) -> int:
        return self._bits.nbytes

    def advance(self, ts_ms: int) -> None:
        """Move event time forward to `ts_ms` (no-op if older), forgetting what left the window.

        For idle streams: time otherwise advances only with the timestamps of added keys.
        """
        self._rotate_to(self.generation_of(ts_ms))

    def contains(self, keys: npt.ArrayLike) -> npt.NDArray[np.bool_]:
        """Whether each key is probably in a live generation (no add, no rotation)."""
        return _found(self._bits, _as_keys(keys), self.sizing.hashes,
                      self.sizing.bits_per_generation)

    def add(self, keys: npt.ArrayLike, ts_ms: npt.ArrayLike) -> None:
        """Add each key to the generation of its timestamp (see `contains_add`)."""
        self._process(keys, ts_ms, report=False)

    def contains_add(self, keys: npt.ArrayLike, ts_ms: npt.ArrayLike) -> npt.NDArray[np.bool_]:
        """Whether each key was probably seen before, then add it.

        "Before" means in a live generation before this call, or earlier in this batch (exact
        for repeats within the batch). A timestamp in a new generation rotates first; one older
        than the oldest live generation is added to the oldest live one. `ts_ms` broadcasts
        against `keys`.
        """
        return self._process(keys, ts_ms, report=True)

    def fill_ratio(self) -> float:
        """Set bits / bits of the newest generation, the one being written.

        At design load it ends its span near 0.5; above that the rate exceeds the sizing.
        """
        if self._newest is None:
            return 0.0
        row = self._newest % self.sizing.generations
        return int(self._counts()[row]) / self.sizing.bits_per_generation

    def estimated_fpr(self) -> float:
        """FPR implied by the actual fill of the live generations: 1 - prod(1 - fill_g^k)."""
        fill = self._counts() / self.sizing.bits_per_generation
        return float(1.0 - np.prod(1.0 - fill**self.sizing.hashes))

    def _counts(self) -> npt.NDArray[np.int64]:
        if not self._counted:
            self._set_bits[:] = np.bitwise_count(self._bits).sum(axis=1)
            self._counted = True
        return self._set_bits

    def header(self) -> bytes:
        """The snapshot's versioned header: layout and newest generation. The bits (`words`)
        are stored apart, so a snapshot copies a slice of them at a time, never all at once."""
        s = self.sizing
        return _HEADER.pack(
            _SNAPSHOT_MAGIC,
            _SNAPSHOT_VERSION,
            s.bits_per_generation,
            s.hashes,
            s.generations,
            s.span_ms,
            self._newest is not None,
            self._newest or 0,
        )

    def words(self) -> npt.NDArray[np.uint64]:
        """The bits, one flat array of 64-bit words (a view: a restore fills it in place)."""
        return self._bits.reshape(-1)

    @classmethod
    def restore(cls, header: bytes, sizing: BloomSizing) -> Self:
        """An empty filter of `header`'s layout and newest generation, whose `words` the caller
        fills.

        Raises ValueError if the header is not one of this version or its layout differs from
        `sizing` (the configuration changed): the caller then starts an empty filter.
        """
        if len(header) != _HEADER.size:
            raise ValueError(f"bloom snapshot header is {len(header)} bytes, expected "
                             f"{_HEADER.size}")
        magic, version, m, k, g, span_ms, has_newest, newest = _HEADER.unpack(header)
        if magic != _SNAPSHOT_MAGIC:
            raise ValueError("not a bloom snapshot: bad magic")
        if version != _SNAPSHOT_VERSION:
            raise ValueError(
                f"bloom snapshot version {version} unsupported (expected {_SNAPSHOT_VERSION})"
            )
        layout = (sizing.bits_per_generation, sizing.hashes, sizing.generations, sizing.span_ms)
        if (m, k, g, span_ms) != layout:
            raise ValueError(
                "bloom snapshot sizing mismatch: snapshot has "
                f"bits_per_generation={m}, hashes={k}, generations={g}, span_ms={span_ms}; "
                f"configured bits_per_generation={sizing.bits_per_generation}, "
                f"hashes={sizing.hashes}, generations={sizing.generations}, "
                f"span_ms={sizing.span_ms}"
            )
        bloom = cls(sizing)
        bloom._newest = newest if has_newest else None
        bloom._counted = False
        return bloom

    def _rotate_to(self, generation: int) -> None:
        """Make `generation` the newest, zeroing the rows of the generations it displaces."""
        if self._newest is None:
            self._newest = generation
        elif generation > self._newest:
            g = self.sizing.generations
            rows = np.arange(self._newest + 1, min(generation, self._newest + g) + 1) % g
            self._bits[rows] = 0
            self._set_bits[rows] = 0
            self._newest = generation

    def _process(
        self, keys: npt.ArrayLike, ts_ms: npt.ArrayLike, *, report: bool
    ) -> npt.NDArray[np.bool_]:
        """Add keys in order; the batch is cut where event time enters a new generation.

        Each segment rotates once, then queries (if `report`) and adds all its keys, so rotation
        costs O(words) per new generation, never per key.
        """
        keys = _as_keys(keys)
        ts = np.broadcast_to(np.asarray(ts_ms, dtype=np.int64), keys.shape)
        gens = ts // np.int64(self.sizing.span_ms)
        found = np.zeros(keys.size, dtype=bool)
        if keys.size == 0:
            return found
        running = np.maximum.accumulate(gens)
        if self._newest is not None:
            running = np.maximum(running, self._newest)
        cuts = np.flatnonzero(running[1:] != running[:-1]) + 1
        g, k, m = self.sizing.generations, self.sizing.hashes, self.sizing.bits_per_generation
        bounds = [0, *cuts.tolist(), keys.size]
        for lo, hi in pairwise(bounds):
            newest = int(running[lo])
            self._rotate_to(newest)
            if report:
                found[lo:hi] = _found(self._bits, keys[lo:hi], k, m) | _repeats(keys[lo:hi])
            # gens <= newest here; older than the oldest live generation goes to the oldest.
            _set(self._bits, self._set_bits, keys[lo:hi],
                 np.maximum(gens[lo:hi], newest - g + 1) % g, k, m)
        return found


@compiled
def _found(bits: np.ndarray, keys: np.ndarray, hashes: int, m: int) -> np.ndarray:
    """Whether all the positions of each key are set in some row of `bits` (a row is a
    generation). A row is left at the key's first clear bit: a new key costs about
    1 / (1 - fill) probes a row, not k."""
    found = np.zeros(len(keys), np.bool_)
    for i in range(len(keys)):
        first, step = _probes(keys[i], m)
        for row in range(bits.shape[0]):
            hit = True
            for j in range(hashes):
                pos = (first + _U64(j) * step) % _U64(m)
                if not bits[row, pos >> _U64(6)] & (_U64(1) << (pos & _U64(63))):
                    hit = False
                    break
            if hit:
                found[i] = True
                break
    return found


@compiled
def _set(bits: np.ndarray, counts: np.ndarray, keys: np.ndarray, rows: np.ndarray, hashes: int,
         m: int) -> None:
    """Set the positions of each key in its row of `bits`, counting in `counts` (a row's) the
    bits that were clear."""
    for i in range(len(keys)):
        first, step = _probes(keys[i], m)
        row = rows[i]
        for j in range(hashes):
            pos = (first + _U64(j) * step) % _U64(m)
            word, bit = pos >> _U64(6), _U64(1) << (pos & _U64(63))
            if not bits[row, word] & bit:
                bits[row, word] |= bit
                counts[row] += 1


@compiled
def _probes(key: np.uint64, m: int) -> tuple[np.uint64, np.uint64]:
    """h1 and h2 of the double hashing (module docstring), both below m: positions
    (h1 + i * h2) mod m never wrap (`MAX_BITS`)."""
    return key % _U64(m), (mix(key) | _U64(1)) % _U64(m)


def _as_keys(keys: npt.ArrayLike) -> npt.NDArray[np.uint64]:
    arr = np.asarray(keys, dtype=np.uint64)
    if arr.ndim != 1:
        raise ValueError(f"keys must be a 1-D array of uint64 hashes, got shape {arr.shape}")
    return arr


def warm_up() -> None:
    """Load (or compile) the kernels now rather than inside the first batch."""
    bits, keys = np.zeros((1, 1), _U64), np.zeros(1, _U64)
    _set(bits, np.zeros(1, np.int64), keys, np.zeros(1, np.int64), 1, 64)
    _found(bits, keys, 1, 64)
    plain = Bloom(1, 0.5)
    plain.add(keys)
    plain.contains(keys)
