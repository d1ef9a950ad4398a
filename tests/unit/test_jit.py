"""The compiled kernels: numba is loaded once the work pays for it, a first run says it compiles
them, a run with them cached says nothing."""

import logging
import subprocess
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from stream_dedup.engine import jit

pytestmark = pytest.mark.unit
# A new engine decides batches of the sizes given, then says whether numba was loaded.
ENGINE_RUN = """
import sys
from stream_dedup.config import Settings
from stream_dedup.engine.batch import Engine
from stream_dedup.engine.stored import TABLES
from stream_dedup.records import Message
from stream_dedup.state import MemoryStore
engine = Engine(Settings(), MemoryStore(TABLES))
texts = ["房间干净整洁早餐丰富", "房间干净整洁早餐很丰富"]
n = 0
for size in map(int, sys.argv[1:]):
    engine.process([Message(f"m{n + i}", texts[i % 2], 1_700_000_000_000 + n + i)
                    for i in range(size)])
    n += size
print("numba" in sys.modules)
"""


def _dispatcher(index: Path) -> SimpleNamespace:
    return SimpleNamespace(_cache=SimpleNamespace(_cache_file=SimpleNamespace(_index_path=str(index))))


def test_kernels_missing_from_the_cache_are_said_to_compile(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "cached.nbi").write_bytes(b"")
    cached = _dispatcher(tmp_path / "cached.nbi")
    with caplog.at_level(logging.INFO, logger=jit.__name__):
        jit.say_compiling([cached])
        assert not caplog.text
        jit.say_compiling([cached, _dispatcher(tmp_path / "new.nbi")])
    assert "compiling 1 of the engine's kernels" in caplog.text and str(tmp_path) in caplog.text


def test_every_cached_kernel_has_an_index_path_numba_writes() -> None:
    from stream_dedup.engine import fingerprint  # noqa: F401 - registers its kernels

    jit.load()
    dispatchers = [k.dispatcher for k in jit._KERNELS]
    assert dispatchers
    assert all(d._cache._cache_file._index_path.endswith(".nbi") for d in dispatchers)


SMALL = jit.WORTH_COMPILING // 4


@pytest.mark.parametrize(("batches", "loads"), [
    ([10], False),  # a small file
    ([jit.WORTH_COMPILING], True),  # a batch that pays for the compiler at once
    ([SMALL] * 3, False),
    ([SMALL] * 4, True),  # the batch that would bring the plain ones to the bound loads it
])
def test_numba_is_loaded_once_plain_kernels_would_cost_more(batches: list[int],
                                                           loads: bool) -> None:
    out = subprocess.run([sys.executable, "-c", ENGINE_RUN, *map(str, batches)],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == str(loads)


def test_a_plain_kernel_wraps_its_integers_without_a_warning() -> None:
    from stream_dedup.engine.fingerprint import mix

    mask = 2**64 - 1
    z = (mask + 0x9E3779B97F4A7C15) & mask  # splitmix64's finalizer in Python integers
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    with jit.plain(), warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow warning would be raised
        assert int(mix(np.uint64(mask))) == z ^ (z >> 31)
