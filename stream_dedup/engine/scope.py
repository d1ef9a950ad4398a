"""Dedup scopes (`scale.scope: key`) without extra reads: a 64-bit salt per scope is XORed into
the exact hash, every Simhash fingerprint and every anchor value of a message.

Within one scope everything is XORed with the same salt, so equal hashes stay equal, block
values collide exactly when they did, and Hamming distances are unchanged: matching behaves as
if the scope had the index to itself. Across two scopes the salts differ by a pseudo-random
64-bit value, so a pair's salted fingerprints are as far apart as two random ones: an exact or
anchor hit needs a 64-bit collision (2^-64 per pair), and a block-table candidate needs a random
pair to agree on a whole block and stay within `index.candidate_distance` on the rest (defaults,
4 blocks of 16 bits and 10: 4 * 2^-16 * P(Binomial(48, 1/2) <= 10) = 1.9e-9 per pair). Only
then does `verify` compare the texts, so a cross-scope match needs both that collision and two
texts that verify as copies: at most 1.9e-9 per (message, copy under another key) pair.

The stored doc keeps the salted fingerprint of the message's first row: expiry, which recomputes
the plain fingerprints from the stored text, recovers each message's salt from it (`recover`).
"""

from __future__ import annotations

import numpy as np
import xxhash

_U64 = np.uint64


def salt(scope: bytes | None) -> int:
    """The salt of a scope; 0 (no change) for no scope."""
    return 0 if scope is None else xxhash.xxh3_64_intdigest(b"stream-dedup scope\x00" + scope)


def salted(hashes: np.ndarray, salt: int) -> np.ndarray:
    """`hashes` XORed with a scope's salt (as they are, for no scope)."""
    return hashes ^ _U64(salt) if salt else hashes


def apply(salts: np.ndarray, fps: np.ndarray, owner: np.ndarray, anchors: np.ndarray,
          families: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Salt each fingerprint row (owned by message `owner[row]`) and each message's anchors
    (`anchors`: message by message, `families[i].sum()` of message i's) with its message's salt;
    anchors keep their positions (the bottom-k choice is the unsalted one)."""
    if not salts.any():
        return fps, anchors
    return fps ^ salts[owner], anchors ^ salts.repeat(families.sum(axis=1))


def recover(stored_fps: np.ndarray, plain_fps: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """Each message's salt: its stored (salted) first-row fingerprint XOR the recomputed one."""
    first_row = np.searchsorted(owner, np.arange(len(stored_fps)))
    return stored_fps.astype(_U64) ^ plain_fps[first_row]
