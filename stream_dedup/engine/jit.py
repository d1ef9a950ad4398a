"""Compiled kernels (numba), shared by the stages that have them (`verify`, `fingerprint`, ...).

A kernel is compiled when it is first called, and numba is imported then, not before: loading
numba and the kernels from its on-disk cache costs about a third of a second a process, as much
as a couple of hundred messages take through the kernels' plain Python. So a small piece of work
may run them as plain Python (`plain`): `Engine.process` does so while the messages so run stay
fewer than `WORTH_COMPILING` (`plain_for`), so a file of ten lines is decided without the
compiler, and a process deciding more never spends more on plain kernels than the compiler
would have cost. Plain and compiled kernels give the same results
(tests/property/test_jit_props.py): numpy's fixed-width scalars wrap as numba's do.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import update_wrapper
from typing import Any

import numpy as np

log = logging.getLogger(__name__)
# Messages of a process from which compiling the kernels costs less than running them as plain
# Python: loading numba and the cached kernels takes ~0.35 s, the plain kernels ~1.6 ms a message
# (dev stream, measured in fresh processes).
WORTH_COMPILING = 200
_KERNELS: list[Kernel] = []
_loaded = False  # numba imported and every kernel given its dispatcher
_plain_messages = 0  # messages `plain_for` let run the kernels as plain Python
_LOADING = threading.Lock()


class _Thread(threading.local):
    """What `plain` asked of this thread's kernel calls (an inspector's thread may run plain
    kernels while another thread runs compiled ones)."""

    plain = 0  # `plain` blocks entered and not left
    wrapping = False  # a plain kernel is running (numpy's overflow warnings are off)


_thread = _Thread()


class Kernel:
    """A function numba compiles when it is first called outside `plain`. Inside a compiled
    kernel another kernel is called as numba's own dispatcher (`_numba_type_`)."""

    def __init__(self, function: Callable[..., Any]) -> None:
        update_wrapper(self, function)
        self.py_func = function
        self.dispatcher: Any = None
        self._run: Callable[..., Any] = self._first_call

    def __call__(self, *args: Any) -> Any:
        return self._plain_call(*args) if _thread.plain else self._run(*args)

    def _first_call(self, *args: Any) -> Any:
        load()
        return self._run(*args)

    def _plain_call(self, *args: Any) -> Any:
        if _thread.wrapping:  # called by a plain kernel
            return self.py_func(*args)
        _thread.wrapping = True
        try:
            with np.errstate(over="ignore"):  # uint64 arithmetic wraps by design
                return self.py_func(*args)
        finally:
            _thread.wrapping = False

    @property
    def _numba_type_(self) -> Any:
        return self.dispatcher._numba_type_

    def _load(self, njit: Callable[..., Any]) -> bool:
        """Give the kernel its dispatcher; False when it cannot be cached on disk. Where no
        cache directory is writable (a read-only root file system with HOME on it) numba
        refuses `cache=True`, so the kernel is compiled in each process instead."""
        try:
            self.dispatcher = njit(cache=True)(self.py_func)
            cached = True
        except RuntimeError:
            self.dispatcher = njit(self.py_func)
            cached = False
        self._run = self.dispatcher
        return cached


def compiled(function: Callable[..., Any]) -> Kernel:
    """`function` as a kernel (module docstring); a kernel made after `load` has its
    dispatcher at once."""
    kernel = Kernel(function)
    _KERNELS.append(kernel)
    if _loaded:
        kernel._load(_njit())
    return kernel


@contextmanager
def plain() -> Iterator[None]:
    """Kernels called inside run as plain Python (numba is not loaded for them)."""
    _thread.plain += 1
    try:
        yield
    finally:
        _thread.plain -= 1


def plain_for(messages: int) -> bool:
    """Whether a batch of `messages` should run the kernels as plain Python: while numba is not
    loaded and the messages run so, these included, stay fewer than `WORTH_COMPILING` (the batch
    that would reach it loads the compiler instead)."""
    global _plain_messages
    if _loaded or _plain_messages + messages >= WORTH_COMPILING:
        return False
    _plain_messages += messages
    return True


def load() -> None:
    """Import numba and give every kernel its dispatcher (each compiles, or loads from numba's
    cache, when first called); once a process. Says on the log when kernels are missing from
    the cache (the first run on a machine, or after an upgrade): they are compiled when first
    called, 10-20 s in all, and cached for the next runs."""
    global _loaded
    with _LOADING:
        if _loaded:
            return
        njit = _njit()
        cached = [k.dispatcher for k in _KERNELS if k._load(njit)]
        _loaded = True
    say_compiling(cached)


def say_compiling(dispatchers: list[Any]) -> None:
    """Log that kernels are compiled, when some of these `cache=True` dispatchers are missing
    from numba's cache."""
    index = [d._cache._cache_file._index_path for d in dispatchers]  # numba's own files
    missing = [path for path in index if not os.path.exists(path)]
    if missing:
        log.info("compiling %d of the engine's kernels for this machine, once (10-20 s): cached "
                 "in %s", len(missing), os.path.dirname(missing[0]))


def _njit() -> Callable[..., Any]:
    import numba.core.entrypoints
    import numba.np.linalg
    from numba import njit

    # numba looks for BLAS when it first loads its array functions (loading a cached kernel
    # does) by importing scipy.linalg: ~0.3 s and ~30 MB a process. The kernels use no linear
    # algebra, so the answer is given without the import; `np.dot` and the like would not
    # compile.
    numba.np.linalg.ensure_blas = _no_blas
    # It also looks for third-party extensions among the entry points of every installed
    # distribution (~20 ms); the kernels use none, so it is told it has looked.
    numba.core.entrypoints._already_initialized = True
    return njit


def _no_blas() -> None:
    raise ImportError("the kernels use no linear algebra")
