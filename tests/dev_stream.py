"""The labelled dev stream some tests replay: its path comes from STREAM_DEDUP_DEV_STREAM, which
`.ci/run` sets. A named file that is missing fails the test, and so does an unset variable under
CI (CI=true): a test that quietly fell back to the small sample would pass while checking less."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

VARIABLE = "STREAM_DEDUP_DEV_STREAM"
SAMPLE = Path(__file__).resolve().parents[1] / "stream_dedup" / "data" / "sample.jsonl.gz"


def dev_stream_path() -> Path:
    """The dev stream; outside CI, without the variable, the shipped sample stands in."""
    named = os.environ.get(VARIABLE)
    if named:
        path = Path(named)
        if not path.is_file():
            pytest.fail(f"{VARIABLE}={named}: no such file")
        return path
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{VARIABLE} is not set: under CI the dev stream is required")
    return SAMPLE
