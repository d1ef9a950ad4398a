"""Fixtures every test folder shares (this folder is on sys.path through this file, so tests may
import `dev_stream`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from dev_stream import dev_stream_path


@pytest.fixture
def dev_stream() -> Path:
    """The labelled dev stream (see tests/dev_stream.py)."""
    return dev_stream_path()
