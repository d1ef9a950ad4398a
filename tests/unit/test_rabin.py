"""The Rabin fingerprint of the DRPKP strategy: its polynomial is irreducible and a fingerprint
is x^64 times the bytes, mod P."""

import pytest

from stream_dedup.engine.strategies.rabin import POLY_LOW, rabin64

pytestmark = pytest.mark.unit
P = (1 << 64) | POLY_LOW


def poly_mod(a: int, m: int) -> int:
    while a.bit_length() >= m.bit_length():
        a ^= m << (a.bit_length() - m.bit_length())
    return a


def poly_mulmod(a: int, b: int, m: int) -> int:
    out = 0
    while b:
        if b & 1:
            out ^= a
        b >>= 1
        a = poly_mod(a << 1, m)
    return poly_mod(out, m)


def poly_gcd(a: int, b: int) -> int:
    while b:
        a, b = b, poly_mod(a, b)
    return a


def test_the_rabin_polynomial_is_irreducible() -> None:
    # Rabin's test for degree n = 64 (only prime factor 2): x^(2^64) = x mod P and
    # gcd(x^(2^32) - x, P) = 1.
    x_power = 2  # the polynomial x
    powers = {}
    for k in range(1, 65):
        x_power = poly_mulmod(x_power, x_power, P)
        powers[k] = x_power
    assert powers[64] == 2
    assert poly_gcd(powers[32] ^ 2, P) == 1


def test_rabin_fingerprint_is_x64_times_the_bytes_mod_p() -> None:
    for data in (b"a", "李白".encode(), b"twelve bytes"):
        assert rabin64(data) == poly_mod(int.from_bytes(data, "big") << 64, P)
