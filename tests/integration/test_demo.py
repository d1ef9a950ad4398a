"""`stream-dedup demo` as a user runs it: two at once on one host both finish, each on ports of
its own, and neither leaves anything behind (temporary directories, port claims, broker data)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stream_dedup.tools.broker import REPO

PORT = int(os.environ.get("STREAM_DEDUP_DEMO_TEST_PORT", "19492"))


def test_two_demos_at_once_both_finish_and_leave_nothing(tmp_path: Path) -> None:
    if not (shutil.which("java") and shutil.which("mvn")):
        pytest.fail("java and mvn are needed for the demo's broker (deploy/test.sh installs them)")
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # both demos' temporary files, and nothing else
    env.pop("KAFKA_RUN_DIR", None)
    runs = [subprocess.Popen([sys.executable, "-m", "stream_dedup.cli", "demo", "--json",
                              "--port", str(PORT)], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(2)]
    done = [run.communicate(timeout=600) for run in runs]
    for run, (out, err) in zip(runs, done, strict=True):
        assert run.returncode == 0, err[-3000:]
        summary = json.loads(out.strip().splitlines()[-1])
        assert summary["in"] == 3000
        assert summary["out"] + summary["duplicates"] + summary["dead_letters"] == summary["in"]
        assert "broker and service start excluded" in out
    brokers = [next(line for line in err.splitlines() if line.startswith("broker "))
               for _, err in done]
    assert brokers[0].split(";")[0] != brokers[1].split(";")[0]  # each its own broker port
    # jieba keeps its dictionary cache in the temporary directory, for every later start.
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "jieba.cache") == []
    run_dir = REPO / "deploy" / ".run"
    assert not (run_dir.is_dir() and any(run_dir.glob("kafka-*")))
