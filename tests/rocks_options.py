"""What a RocksDB state directory says of its options, for the tests of the options chosen."""

from __future__ import annotations

from pathlib import Path


def families_whose_options_hold(path: Path, setting: str) -> set[str]:
    """The column families whose section of the store's latest OPTIONS file holds `setting`."""
    text = max(path.glob("OPTIONS-*")).read_text()
    return {
        section.split('"')[1] for section in text.split("[CFOptions ")[1:] if setting in section
    }
