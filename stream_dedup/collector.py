"""Python's cyclic garbage collector, paused around a batch's work.

A batch holds many short-lived containers (records, messages, write ops, candidates, outputs,
futures) until it ends; with the collector on, it runs every 700 allocations and re-examines all
of them each time. Reference counting frees them when the batch ends, and the next collection
finds little.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """No cyclic collection inside the block (nested blocks are fine)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
