"""File mode's input: lines numbered from 1 with their newline cut and nothing else skipped,
gzip read by its name, and a file that cannot be read an error naming it."""

import gzip
from pathlib import Path

import pytest

from stream_dedup.errors import InputError
from stream_dedup.files import Lines, count_lines, input_size, read_lines

pytestmark = pytest.mark.unit
DATA = '{"id": 1}\r\n\n好评\n  trailing  '.encode()


@pytest.fixture(params=["in.jsonl", "in.jsonl.gz"])
def path(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    p = tmp_path / request.param
    p.write_bytes(gzip.compress(DATA) if p.suffix == ".gz" else DATA)
    return p


def test_read_lines_numbers_every_line_and_cuts_only_its_newline(path: Path) -> None:
    assert list(read_lines(path)) == [(1, b'{"id": 1}'), (2, b""), (3, "好评".encode()),
                                      (4, b"  trailing  ")]


def test_count_lines_counts_a_last_line_without_a_newline(path: Path, tmp_path: Path) -> None:
    assert count_lines(path) == 4
    ended = tmp_path / "ended.txt"
    ended.write_bytes(b"a\nb\n")
    assert count_lines(ended) == 2
    assert count_lines(tmp_path / "none") is None


def test_a_missing_or_broken_file_is_an_input_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"none\.jsonl: No such file") as err:
        list(read_lines(tmp_path / "none.jsonl"))
    assert err.value.path == str(tmp_path / "none.jsonl")
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(gzip.compress(DATA)[:-12])  # cut short
    with pytest.raises(InputError, match="cannot read"):
        list(read_lines(broken))
    assert count_lines(broken) is None


def test_a_read_ahead_counts_a_short_input_and_every_line_is_read_once(path: Path) -> None:
    lines = Lines(path)
    assert lines.ahead(4, 1 << 20) == lines.total == 4
    assert list(lines) == list(read_lines(path))


def test_a_read_ahead_past_its_bounds_says_nothing_and_loses_no_line(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_bytes(b"x\n" * (3 << 20))
    lines = Lines(big)
    assert lines.ahead(10, 1 << 30) is None and lines.total is None  # past 10 lines
    assert sum(1 for _ in lines) == 3 << 20
    lines = Lines(big)
    assert lines.ahead(1 << 30, 100) is None  # past 100 bytes
    assert [n for n, _ in lines][-1] == 3 << 20


def test_a_read_error_met_ahead_is_raised_after_the_lines_before_it(tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(gzip.compress(b"a\n" * 100_000)[:-12])  # cut short
    lines = Lines(broken)
    assert lines.ahead(1 << 30, 1 << 30) is None
    read = []
    with pytest.raises(InputError, match="cannot read"):
        for number, _ in lines:
            read.append(number)
    assert read and read == list(range(1, len(read) + 1))


def test_input_size_is_the_bytes_on_disk(path: Path, tmp_path: Path) -> None:
    assert input_size(path) == path.stat().st_size
    assert input_size("-") is None and input_size(tmp_path / "none") is None
