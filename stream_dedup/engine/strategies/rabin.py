"""Rabin fingerprints (Rabin 1981), the word hash of seed 004's DRPKP.

A byte string is read as a polynomial A(x) over GF(2); its fingerprint is x^64·A(x) mod P(x), P an
irreducible polynomial of degree 64. 004 draws P at random; here it was drawn once, by a seeded
search (random 64-bit low parts until Rabin's irreducibility test passed), and fixed so stored
fingerprints stay comparable (`tests/unit/test_rabin.py` re-checks that P is irreducible).
Multiplying by x^64 (8 zero bytes appended) spreads a short word over all 64 bits; without it a
two-character word would be its own six UTF-8 bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

POLY_LOW = 0x3F877F43D130108F  # P(x) = x^64 + these 64 bits
_MASK = (1 << 64) - 1


def _shifted_out_table() -> tuple[int, ...]:
    """T[t] = t(x)·x^64 mod P for every byte t: what the 8 bits shifted past degree 63 add."""
    table = []
    for top in range(256):
        value = 0
        for bit in range(8):
            if top >> bit & 1:
                value ^= _times_x_power(POLY_LOW, bit)  # x^(64+bit) mod P
        table.append(value)
    return tuple(table)


def _times_x_power(value: int, times: int) -> int:
    """value(x)·x^times mod P, value of degree < 64 (x^64 ≡ POLY_LOW)."""
    for _ in range(times):
        carry = value >> 63
        value = (value << 1) & _MASK
        if carry:
            value ^= POLY_LOW
    return value


_TABLE = _shifted_out_table()


@lru_cache(maxsize=1 << 18)
def rabin64(data: bytes) -> int:
    """x^64·A(x) mod P of the bytes, most significant bit of the first byte highest."""
    fp = 0
    for byte in data + bytes(8):
        fp = (((fp << 8) & _MASK) | byte) ^ _TABLE[fp >> 56]
    return fp


def rabin_hashes(words: Sequence[str]) -> np.ndarray:
    """Rabin fingerprints of the words' UTF-8 bytes, uint64."""
    return np.fromiter((rabin64(w.encode("utf-8")) for w in words), np.uint64, count=len(words))
