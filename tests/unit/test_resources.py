"""The lexicon's resources: read from their sources once, then from the user cache, with the same
content; a cache that cannot be read or written is not an error."""

import logging
from pathlib import Path

import pytest

from stream_dedup.engine import resources

pytestmark = pytest.mark.unit


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("STREAM_DEDUP_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_built_once_then_read_from_the_cache_alike(
    cache_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger=resources.__name__):
        jieba, built = resources.load()
    assert "preparing" in caplog.text and str(cache_dir) in caplog.text
    assert [p.name for p in cache_dir.iterdir()] == [resources.cache_path().name]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger=resources.__name__):
        _, cached = resources.load()
    assert not caplog.text
    assert cached == built and cached is not built
    assert jieba.dt.FREQ is cached.freq and jieba.posseg.dt.word_tag_tab is cached.tags
    assert all(cached.freq.get(word, 0) > 0 for word in cached.tags)
    assert jieba.lcut("我们今天去北京大学参观", HMM=False) == ["我们", "今天", "去", "北京大学", "参观"]


def test_an_unreadable_cache_is_built_again(
    cache_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = resources.cache_path()
    cache_dir.mkdir()
    path.write_bytes(b"not a pickle")
    with caplog.at_level(logging.WARNING, logger=resources.__name__):
        _, found = resources.load()
    assert "unreadable" in caplog.text
    assert found.freq["北京"] > 0
    assert resources._read(path) == found  # written anew


def test_an_unwritable_cache_directory_is_read_around(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("STREAM_DEDUP_CACHE_DIR", str(blocker / "cache"))
    with caplog.at_level(logging.WARNING, logger=resources.__name__):
        _, found = resources.load()
    assert "cannot cache" in caplog.text
    assert found.tags["北京"] == "ns"
