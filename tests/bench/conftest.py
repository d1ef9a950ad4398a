"""The bench scripts' modules for their tests, imported with bench/ on the path as when the
scripts run (they import `results` beside them)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _bench(name: str) -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCH))


@pytest.fixture(scope="module")
def results() -> Iterator[ModuleType]:
    yield from _bench("results")


@pytest.fixture(scope="module")
def whole_process() -> Iterator[ModuleType]:
    yield from _bench("whole_process")
