"""Compiled kernels (numba), shared by the stages that have them (`verify`, `fingerprint`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numba import njit


def compiled(kernel: Callable[..., Any]) -> Callable[..., Any]:
    """`numba.njit` with numba's on-disk cache (without it, each process compiles: ~3 s for
    `verify`'s kernels, ~8 s for `fingerprint`'s). Where no cache directory is writable (a
    read-only root file system with HOME on it) numba refuses `cache=True` on import, so the
    kernel is compiled in each process instead."""
    try:
        return njit(cache=True)(kernel)
    except RuntimeError:
        return njit(kernel)
