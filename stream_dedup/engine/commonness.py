"""What the stream says often: how many earlier messages carried each character trigram.

Boilerplate is not evidence of copying and not new content: stock greetings and sign-offs,
repost comments, lead-ins and templates are text that many messages of a stream carry. They are
learnt from the stream itself, not listed: a count-min sketch counts, for every character
trigram, the distinct messages that carried it (each message once; a copy counts only what it
adds to its source, so copies of a text do not make it boilerplate, while a comment or lead-in
that many copies add does), and a character of a message is *common* when a trigram over it had
been carried by `min_messages` earlier messages. The meaning check reads the
mask of a later text's common characters: a clause added at an edge of a short text is new content
only in characters of its own that the stream does not repeat (`spans._adds_content`).

Counts age by generations: every `generation` messages the older of two sketches is cleared, so
what the stream stopped saying is forgotten and the counters stay small (a byte each: only counts
up to a few matter). Messages are masked and counted one at a time in stream order, so the
verdicts of a stream do not depend on how it is cut into batches; the engine keeps the sketch in
its state with the Bloom filter's snapshot and counts the messages stored since again after a
restart, so a restart does not change them either. Under scopes (`scale.scope: key`) the engine
XORs the scope salt into a message's trigram hashes, so each key's boilerplate is its own.

The engine goes through a batch with `InOrder`: a message without candidates is never masked,
so the messages counted between two masks are counted in one kernel call made just before the
next mask, which sees the counts it would have seen one message at a time.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import fingerprint as fpr
from .jit import compiled

_WIDTH_BITS = 20  # counters per row: 2^20 (two rows of two generations: 4 MiB of bytes)
_HEADER = struct.Struct("<QQ")  # messages counted, generation size
_ROWS = 2
_N = 3  # characters per counted n-gram
_NO_SALT = np.uint64(0)


class Commonness:
    """A count-min sketch of trigram document frequencies over two generations."""

    def __init__(self, min_messages: int, generation: int) -> None:
        self.min_messages = min_messages
        self.generation = generation
        self.counted = 0
        self._sketch = np.zeros((2, _ROWS, 1 << _WIDTH_BITS), np.uint8)

    def hashes(self, texts: Sequence[str]) -> list[np.ndarray]:
        """The trigram hashes of each text (none for a text shorter than a trigram)."""
        hashes, owners = fpr.ngram_hashes(fpr.Batch.of(texts), _N)
        bounds = np.searchsorted(owners, np.arange(len(texts) + 1)).tolist()
        return [hashes[bounds[t]:bounds[t + 1]] if len(text) >= _N else hashes[:0]
                for t, text in enumerate(texts)]

    def mask(self, grams: np.ndarray, length: int) -> np.ndarray:
        """Which of a text's `length` characters are common, from its trigram `hashes`."""
        return _mask(self._sketch, grams, _NO_SALT, length, self.min_messages)

    def learn(self, grams: np.ndarray, source: np.ndarray | None) -> None:
        """Count a message decided unique or near (exact copies add nothing) that carried these
        trigram `hashes`: all of them, or of a near copy, those its source's `hashes` lack (the
        comment or lead-in it adds, not the text it copies: copies of a text do not make it
        boilerplate)."""
        skip = source if source is not None else grams[:0]
        self.counted = _count(self._sketch, grams, skip, _NO_SALT, self.counted, self.generation)

    def in_order(self, texts: Sequence[str], salts: np.ndarray) -> InOrder:
        """A batch's pass: its `len(salts)` messages' texts, then their candidates' texts."""
        return InOrder(self, texts, salts)

    def snapshot(self) -> bytes:
        return _HEADER.pack(self.counted, self.generation) + self._sketch.tobytes()

    @classmethod
    def restore(cls, data: bytes, min_messages: int, generation: int) -> Commonness | None:
        """The sketch of a `snapshot`; None when it was taken with another generation size or
        is damaged (the stored messages are then counted again from the first)."""
        made = cls(min_messages, generation)
        if len(data) != _HEADER.size + made._sketch.nbytes:
            return None
        counted, size = _HEADER.unpack_from(data)
        if size != generation:
            return None
        made.counted = counted
        made._sketch = np.frombuffer(data, np.uint8, offset=_HEADER.size).reshape(
            made._sketch.shape).copy()
        return made


class InOrder:
    """A batch's messages masked and counted in stream order (message i is masked, if at all,
    before it is counted and after message i - 1 is), each under its scope salt (`salts[i]`)
    and, for a near copy, less its source's trigrams (`source`). The counting of the messages
    since the last mask waits for the next mask or `finish`, and is then one kernel call."""

    def __init__(self, sketch: Commonness, texts: Sequence[str], salts: np.ndarray) -> None:
        self._commonness = sketch
        self._values, owners = fpr.ngram_hashes(fpr.Batch.of(texts), _N)
        bounds = np.searchsorted(owners, np.arange(len(texts) + 1))
        self._lengths = np.fromiter(map(len, texts), np.int64, count=len(texts))
        self._starts = bounds[:-1]
        self._ends = np.where(self._lengths >= _N, bounds[1:], self._starts)  # `hashes`
        self._salts = salts
        self._sources = np.full(len(salts), -1, np.int64)
        self._counted_to = 0  # messages before it are counted

    def mask(self, message: int) -> Sequence[bool]:
        """`Commonness.mask` of a message, every earlier one counted, made when it is first
        read: the meaning check reads it only for a long clause added at an edge, few of the
        messages with candidates. It must be read, if at all, before the mask of a later
        message is."""
        return _Mask(self, message)

    def _made(self, message: int) -> np.ndarray:
        if self._counted_to > message:
            raise RuntimeError(f"the mask of message {message} read after a later one's")
        s = self._commonness
        s.counted, common = _count_then_mask(
            s._sketch, self._values, self._starts, self._ends, self._salts, self._sources,
            self._counted_to, message, s.counted, s.generation, self._lengths[message],
            s.min_messages)
        self._counted_to = message
        return common

    def source(self, message: int, text: int) -> None:
        """A near copy's source: texts[text], whose trigrams it is not counted for."""
        self._sources[message] = text

    def finish(self) -> None:
        """Count the messages not counted yet."""
        s = self._commonness
        s.counted = _count_range(s._sketch, self._values, self._starts, self._ends, self._salts,
                                 self._sources, self._counted_to, len(self._salts), s.counted,
                                 s.generation)
        self._counted_to = len(self._salts)


class _Mask(Sequence[bool]):
    """`InOrder.mask`: made when first read."""

    __slots__ = ("_in_order", "_mask", "_message")

    def __init__(self, in_order: InOrder, message: int) -> None:
        self._in_order = in_order
        self._message = message
        self._mask: np.ndarray | None = None

    def _made(self) -> np.ndarray:
        if self._mask is None:
            self._mask = self._in_order._made(self._message)
        return self._mask

    def __getitem__(self, index: Any) -> Any:
        return self._made()[index]

    def __len__(self) -> int:
        return int(self._in_order._lengths[self._message])


@compiled
def _count_range(sketch: np.ndarray, values: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                 salts: np.ndarray, sources: np.ndarray, first: int, stop: int, counted: int,
                 generation: int) -> int:
    """`_count` messages first .. stop - 1 in order (`InOrder`)."""
    for i in range(first, stop):
        source = sources[i]
        skip = values[starts[source]:ends[source]] if source >= 0 else values[:0]
        counted = _count(sketch, values[starts[i]:ends[i]], skip, salts[i], counted, generation)
    return counted


@compiled
def _count_then_mask(sketch: np.ndarray, values: np.ndarray, starts: np.ndarray,
                     ends: np.ndarray, salts: np.ndarray, sources: np.ndarray, first: int,
                     message: int, counted: int, generation: int, length: int,
                     min_messages: int) -> tuple[int, np.ndarray]:
    """`_count_range` up to `message`, then its `_mask`: one call."""
    counted = _count_range(sketch, values, starts, ends, salts, sources, first, message,
                           counted, generation)
    return counted, _mask(sketch, values[starts[message]:ends[message]], salts[message], length,
                          min_messages)


@compiled
def _mask(sketch: np.ndarray, grams: np.ndarray, salt: np.uint64, length: int,
          min_messages: int) -> np.ndarray:
    """Which characters a trigram of `grams ^ salt` seen in `min_messages` messages covers."""
    cells = np.uint64((1 << _WIDTH_BITS) - 1)
    common = np.zeros(length, np.bool_)
    for g in range(len(grams)):
        seen = 1 << 30
        gram = grams[g] ^ salt
        for row in range(_ROWS):
            cell = (gram >> np.uint64(_WIDTH_BITS * row)) & cells
            seen = min(seen, int(sketch[0, row, cell]) + int(sketch[1, row, cell]))
        if seen >= min_messages:
            common[g:g + _N] = True
    return common


@compiled
def _count(sketch: np.ndarray, grams: np.ndarray, skip: np.ndarray, salt: np.uint64,
           counted: int, generation: int) -> int:
    """Count the distinct `grams` not in `skip` (both XORed with `salt`) as one message, when
    there are any. Distinct through a small open-addressing set of the message's hashes (already
    uniform: their low bits are the slot), which costs a tenth of sorting them."""
    size = 4
    while size < 2 * (len(grams) + len(skip)):
        size <<= 1
    slots = np.uint64(size - 1)
    table = np.empty(size, np.uint64)
    full = np.zeros(size, np.bool_)
    new = np.empty(len(grams), np.uint64)
    added = 0
    for k in range(len(skip) + len(grams)):
        value = (skip[k] if k < len(skip) else grams[k - len(skip)]) ^ salt
        slot = value & slots
        while full[slot] and table[slot] != value:
            slot = (slot + np.uint64(1)) & slots
        if full[slot]:
            continue  # a trigram of the source, or one the message carried already
        full[slot], table[slot] = True, value
        if k >= len(skip):
            new[added] = value
            added += 1
    if not added:
        return counted
    if counted and counted % generation == 0:
        sketch[0] = sketch[1]
        sketch[1] = 0
    cells = np.uint64((1 << _WIDTH_BITS) - 1)
    for k in range(added):
        for row in range(_ROWS):
            cell = (new[k] >> np.uint64(_WIDTH_BITS * row)) & cells
            if sketch[1, row, cell] < 255:
                sketch[1, row, cell] += 1
    return counted + 1
