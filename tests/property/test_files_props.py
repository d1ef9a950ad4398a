"""An input file's lines, read in chunks (`files.Lines`): whatever the bytes and wherever the
chunks end, the lines are those of reading the file line by line, each without its newline, and
a read-ahead counts them as a line count would."""

import gzip
import io
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_dedup import files

pytestmark = pytest.mark.property
# Bytes where lines, carriage returns and chunk ends meet in every way.
contents = st.lists(st.sampled_from([b"\n", b"\r", b"\r\n", b"a", "好".encode(), b"xyz"]),
                    max_size=40).map(b"".join)


def _by_line(data: bytes) -> list[tuple[int, bytes]]:
    return [(n, line.rstrip(b"\r\n")) for n, line in enumerate(io.BytesIO(data), start=1)]


@settings(max_examples=200, deadline=None)
@given(data=contents, chunk=st.integers(1, 9), gz=st.booleans(), most=st.integers(0, 12))
def test_lines_are_those_read_line_by_line(data: bytes, chunk: int, gz: bool,
                                           most: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("in.txt.gz" if gz else "in.txt")
        path.write_bytes(gzip.compress(data) if gz else data)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(files, "_READ", chunk)
            lines = files.Lines(path)
            total = lines.ahead(most, 1 << 20)
            got = list(lines)
        counted = files.count_lines(path)
    assert got == _by_line(data)
    if total is not None:
        assert total == counted == len(got) <= most
    else:
        assert len(got) > most
