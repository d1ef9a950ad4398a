"""Compiled kernels (numba), shared by the stages that have them (`verify`, `fingerprint`)."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from functools import cache
from typing import Any

import numba.np.linalg
from numba import njit

log = logging.getLogger(__name__)
_CACHED: list[Any] = []  # the kernels numba keeps compiled on disk


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
        dispatcher = njit(cache=True)(kernel)
    except RuntimeError:
        return njit(kernel)
    _CACHED.append(dispatcher)
    return dispatcher


@cache
def note_compiling() -> None:
    """Say on the log, once a process, when kernels are missing from numba's cache (the first
    run on a machine, or after an upgrade): they are compiled when first called, 10-20 s in all,
    and cached for the next runs."""
    index = [k._cache._cache_file._index_path for k in _CACHED]  # numba's own index files
    missing = [path for path in index if not os.path.exists(path)]
    if missing:
        log.info("compiling %d of the engine's kernels for this machine, once (10-20 s): cached "
                 "in %s", len(missing), os.path.dirname(missing[0]))
