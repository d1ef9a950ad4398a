"""The local checkpoint of a changelog-backed state directory: written beside the directory after
a clean close, read back as written, removed before the directory is written to, and never
trusted when it cannot be read."""

import time
from pathlib import Path

import pytest

from stream_dedup.scale import checkpoint
from stream_dedup.scale.checkpoint import Checkpoint

pytestmark = pytest.mark.unit


@pytest.fixture
def state(tmp_path: Path) -> str:
    directory = tmp_path / "state-3"
    (directory / "sub").mkdir(parents=True)
    (directory / "sub" / "000001.sst").write_bytes(b"rows")
    return str(directory)


def test_a_written_checkpoint_reads_back_beside_its_directory(state: str) -> None:
    before = time.time()
    checkpoint.write(state + "/", "changelog", 3, 1234)  # a trailing slash names the same one
    got = checkpoint.read(state)
    assert got is not None and got == Checkpoint("changelog", 3, 1234, got.written_at)
    assert before <= got.written_at <= time.time()
    assert checkpoint.path_of(state) == state + ".checkpoint"
    assert sorted(p.name for p in Path(state).parent.iterdir()) == ["state-3",
                                                                    "state-3.checkpoint"]


def test_removed_before_writing_and_removing_none_is_fine(state: str) -> None:
    checkpoint.write(state, "changelog", 0, 5)
    checkpoint.remove(state)
    assert checkpoint.read(state) is None
    checkpoint.remove(state)  # nothing there: nothing to do


@pytest.mark.parametrize("content", ["", "{", "[]", '{"topic": "t", "partition": 0}',
                                     '{"topic": "t", "partition": "x", "offset": 1, '
                                     '"written_at": 0}'])
def test_an_unreadable_checkpoint_is_not_trusted(state: str, content: str) -> None:
    Path(checkpoint.path_of(state)).write_text(content)
    assert checkpoint.read(state) is None
