"""The state directory on a small filesystem this test makes (a size-limited tmpfs) that fills up
while `stream-dedup run` (a subprocess) reads a backlog: the service stops deciding and
committing, says so in one line, and goes on by itself once space is freed; nothing is lost and
the outputs are those of file mode. With the engine in the service's process and in a child."""

from __future__ import annotations

import dataclasses
import errno
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from conftest import service_unavailable
from kafka_helpers import (
    check_nothing_lost,
    make_topics,
    produce,
    service_settings,
    start_service,
    stop_service,
    stream_lines,
    wait_drained,
    wait_lag_below,
)

from stream_dedup.kafka.topics import group_lag

pytestmark = pytest.mark.integration
RECORDS = 30_000
DISK = "128m"


@pytest.fixture
def small_disk(tmp_path: Path):
    """A tmpfs of `DISK` bytes, unmounted at the end (mounting needs root)."""
    where = tmp_path / "disk"
    where.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK},mode=0700", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if made.returncode != 0:
        service_unavailable(f"cannot mount a tmpfs for the state: {made.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(disk: Path) -> Path:
    """A file taking every free byte of `disk`."""
    filler = disk / "filler"
    with open(filler, "wb") as f:
        try:
            while True:
                f.write(b"\0" * (1 << 20))
                f.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    return filler


def _wait_for(log: Path, text: str, proc: subprocess.Popen, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while text not in log.read_text(errors="replace"):
        assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
        assert time.monotonic() < deadline, f"never logged {text!r}"
        time.sleep(0.2)


@pytest.mark.parametrize("engine_process", ["inline", "child"])
def test_a_full_state_disk_pauses_the_service_until_space_returns(
    kafka_bootstrap, unique_topic, small_disk, tmp_path, engine_process
) -> None:
    _, lines = stream_lines(RECORDS)
    topics = make_topics(unique_topic, input_partitions=1)
    settings = service_settings(
        kafka_bootstrap, topics, f"disk-{uuid.uuid4().hex[:8]}", poll_batch_size=200
    )
    settings = dataclasses.replace(
        settings, engine=dataclasses.replace(settings.engine, process=engine_process)
    )
    produce(kafka_bootstrap, topics["input"], lines)
    log = tmp_path / "service.log"
    proc = start_service(settings, small_disk / "state", log)
    k = settings.kafka
    try:
        wait_lag_below(settings, RECORDS - 2_000, proc, timeout_s=120)
        filler = _fill(small_disk)
        _wait_for(log, "state disk full", proc, timeout_s=120)
        time.sleep(2)  # the batch in flight before the full one may still commit
        paused = group_lag(k.bootstrap_servers, k.group_id, k.input_topics)
        time.sleep(8)
        assert proc.poll() is None, "the service died of the full disk"
        assert group_lag(k.bootstrap_servers, k.group_id, k.input_topics) == paused > 0, (
            "offsets were committed while the state could not be written"
        )
        filler.unlink()
        _wait_for(log, "state disk has room again", proc, timeout_s=120)
        wait_drained(settings, 240, alive=lambda: proc.poll() is None)
    except BaseException:
        proc.kill()
        raise
    finally:
        (small_disk / "filler").unlink(missing_ok=True)
    stop_service(proc, log, timeout_s=120)
    twice, distinct = check_nothing_lost(settings, topics, lines)
    text = log.read_text(errors="replace")
    assert text.count("state disk full") == 1 and "Traceback" not in text, text[-3000:]
    assert distinct == len(lines)
    print(
        f"\nfull state disk (engine {engine_process}): paused with lag {paused}, went on once "
        f"space was freed; {len(lines)} records, 0 lost, {twice} emitted twice"
    )
