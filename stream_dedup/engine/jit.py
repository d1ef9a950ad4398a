"""Compiled kernels (numba), shared by the stages that have them (`verify`, `fingerprint`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba.np.linalg
from numba import njit


def _no_blas() -> None:
    raise ImportError("the kernels use no linear algebra")


# numba looks for BLAS when it first loads its array functions (loading a cached kernel does) by
# importing scipy.linalg: ~0.3 s and ~30 MB a process. The kernels here use no linear algebra,
# so the answer is given without the import; `np.dot` and the like would not compile.
numba.np.linalg.ensure_blas = _no_blas


def compiled(kernel: Callable[..., Any]) -> Callable[..., Any]:
    """`numba.njit` with numba's on-disk cache (without it, each process compiles: ~3 s for
    `verify`'s kernels, ~8 s for `fingerprint`'s). Where no cache directory is writable (a
    read-only root file system with HOME on it) numba refuses `cache=True` on import, so the
    kernel is compiled in each process instead."""
    try:
        return njit(cache=True)(kernel)
    except RuntimeError:
        return njit(kernel)
