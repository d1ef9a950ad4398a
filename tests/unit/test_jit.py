"""The compiled kernels: a first run says it compiles them; a run with them cached says nothing."""

import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from stream_dedup.engine import jit

pytestmark = pytest.mark.unit


def _kernel(index: Path) -> SimpleNamespace:
    return SimpleNamespace(_cache=SimpleNamespace(_cache_file=SimpleNamespace(_index_path=str(index))))


def test_kernels_missing_from_the_cache_are_said_to_compile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "cached.nbi").write_bytes(b"")
    monkeypatch.setattr(jit, "_CACHED", [_kernel(tmp_path / "cached.nbi")])
    with caplog.at_level(logging.INFO, logger=jit.__name__):
        jit.note_compiling.__wrapped__()
        assert not caplog.text
        jit._CACHED.append(_kernel(tmp_path / "new.nbi"))
        jit.note_compiling.__wrapped__()
    assert "compiling 1 of the engine's kernels" in caplog.text and str(tmp_path) in caplog.text


def test_every_cached_kernel_has_an_index_path_numba_writes() -> None:
    from stream_dedup.engine import fingerprint  # noqa: F401 - registers its kernels

    assert jit._CACHED
    assert all(k._cache._cache_file._index_path.endswith(".nbi") for k in jit._CACHED)
