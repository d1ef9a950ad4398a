"""Fingerprint strategies selectable with `fingerprint.strategy` (see fingerprint.Strategy)."""

from __future__ import annotations

from ..config import FingerprintSettings
from ..fingerprint import CharSimhash, Strategy


def make_strategy(settings: FingerprintSettings) -> Strategy:
    """The configured strategy. The default, `char-simhash`, needs no fitted statistics."""
    if settings.strategy == "char-simhash":
        return CharSimhash(settings.ngram)
    raise AssertionError(f"unhandled fingerprint.strategy {settings.strategy!r}")
