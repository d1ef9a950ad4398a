"""Stopping `stream-dedup run` (a subprocess) in the states a stop can meet: no broker answering
at start, the broker gone mid-run with outputs and commits in flight, and an optional limit on
how long a start waits for the broker. Each ends within `kafka.shutdown_timeout_s` (or the
limit), with one line saying so, no traceback, and the documented exit code: 0 for a requested
stop, 1 for a start that gave up."""

from __future__ import annotations

import dataclasses
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from kafka_helpers import (
    REPO,
    id_of,
    make_topics,
    produce,
    read_topic,
    service_env,
    service_settings,
    start_service,
    stop_service,
    stream_lines,
    wait_drained,
    wait_lag_below,
)

from stream_dedup.config import ScaleSettings, Settings

pytestmark = pytest.mark.integration
SHUTDOWN_S = 8.0


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"  # nobody listens once it is closed


def _stop(proc: subprocess.Popen, log: Path, after: str) -> tuple[int, float, str]:
    """SIGTERM once `after` is in the log; (exit code, seconds to exit, the log)."""
    deadline = time.monotonic() + 120
    while after not in log.read_text(errors="replace"):
        assert proc.poll() is None, log.read_text(errors="replace")
        assert time.monotonic() < deadline, f"never logged {after!r}"
        time.sleep(0.2)
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(SHUTDOWN_S + 30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"no exit within {SHUTDOWN_S + 30:.0f} s of SIGTERM") from None
    return code, time.monotonic() - started, log.read_text(errors="replace")


def _after_sigterm(text: str) -> list[str]:
    return text.split("SIGTERM received")[1].splitlines()[1:]


def _settings(bootstrap: str, topics: dict[str, str], **kafka: object) -> Settings:
    s = service_settings(bootstrap, topics, f"shutdown-{time.monotonic_ns()}",
                         shutdown_timeout_s=SHUTDOWN_S, **kafka)
    return dataclasses.replace(s, engine=dataclasses.replace(s.engine, process="inline"))


def test_a_stop_while_no_broker_answers_is_one_line_and_exit_0(tmp_path) -> None:
    topics = {"input": "in", "output": "out", "duplicates": "dups", "dead": "dead"}
    settings = _settings(_closed_port(), topics, commit_timeout_s=3.0)
    log = tmp_path / "service.log"
    proc = start_service(settings, tmp_path / "state", log)
    code, took, text = _stop(proc, log, "connecting the consumer failed, retrying attempt=2")
    assert code == 0 and took < SHUTDOWN_S, (code, took, text)
    assert "Traceback" not in text
    said = _after_sigterm(text)
    assert len(said) == 1 and "stopped on request before the service ran" in said[0], text
    waits = [line for line in text.splitlines() if "failed, retrying" in line]
    assert all(" WARNING " in w and "waited_s=" in w for w in waits), waits
    assert " ERROR " not in text, "an unreachable broker is a WARNING per backoff step"


def test_a_start_gives_up_after_the_connect_timeout_in_one_line(tmp_path) -> None:
    topics = {"input": "in", "output": "out", "duplicates": "dups", "dead": "dead"}
    settings = _settings(_closed_port(), topics, commit_timeout_s=2.0, connect_timeout_s=5.0)
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "stream_dedup.cli", "run"],
                          env=service_env(settings, tmp_path / "state"), capture_output=True,
                          text=True, timeout=120)
    took = time.monotonic() - started
    assert proc.returncode == 1 and took < 60, (proc.returncode, took)
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("stream-dedup: connecting the consumer: no answer for "), last
    assert "kafka.connect_timeout_s=5" in last and "Traceback" not in proc.stderr


def test_a_stop_with_the_broker_gone_mid_run_ends_within_the_timeout(
        kafka_bootstrap, unique_topic, tmp_path) -> None:
    topics = make_topics(unique_topic, 1)
    settings = _settings(kafka_bootstrap, topics, poll_batch_size=200)
    _, lines = stream_lines(20_000)
    produce(kafka_bootstrap, topics["input"], lines)
    log = tmp_path / "service.log"
    proc = start_service(settings, tmp_path / "state", log)
    script = ["bash", str(REPO / "deploy" / "kafka.sh")]
    try:
        deadline = time.monotonic() + 120
        while "partitions assigned" not in log.read_text(errors="replace"):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        time.sleep(1.0)  # batches in flight: produced, acknowledged, committed
        subprocess.run([*script, "kill9"], check=True, capture_output=True, timeout=60)
        code, took, text = _stop(proc, log, "partitions assigned")
    finally:
        subprocess.run([*script, "start"], check=False, capture_output=True, timeout=180)
        if proc.poll() is None:
            proc.kill()
    assert code == 0 and took < SHUTDOWN_S + 5, (code, took, text[-3000:])
    assert "Traceback" not in text
    after = _after_sigterm(text)  # the clients' own lines about the outage go on meanwhile
    said = [line for line in after if " stream_dedup.runtime." in line and " INFO " not in line]
    assert len(said) == 1 and "shutdown time ran out" in said[0], said
    assert not [line for line in after if "last commit not made" in line
                or "outputs unacknowledged" in line], "the close repeats what was said"


def _stop_after(proc: subprocess.Popen, log: Path, after: str, delay_s: float
                ) -> tuple[int, float, str]:
    """SIGTERM `delay_s` after `after` is in the log; (exit code, seconds to exit, the log)."""
    deadline = time.monotonic() + 180
    while after not in log.read_text(errors="replace"):
        assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
        assert time.monotonic() < deadline, f"never logged {after!r}"
        time.sleep(0.05)
    time.sleep(delay_s)
    return _stop(proc, log, after)


def _one_stop_line(text: str) -> list[str]:
    """The service's own lines after SIGTERM other than INFO (kafka clients' lines aside)."""
    return [line for line in _after_sigterm(text)
            if " stream_dedup." in line and " INFO " not in line]


def test_a_stop_mid_restore_of_the_changelog_ends_within_the_timeout(
        kafka_bootstrap, unique_topic, changelogs, tmp_path) -> None:
    """scope key: a first service fills the changelog, a second one on an empty state directory
    restores it in full when the partition's first record arrives, and gets SIGTERM then."""
    topics = make_topics(unique_topic, 1)
    settings = _settings(kafka_bootstrap, topics, poll_batch_size=500)
    changelogs.append(ScaleSettings().changelog_for(settings.kafka.group_id, topics["input"]))
    _, lines = stream_lines(40_000)
    produce(kafka_bootstrap, topics["input"], lines[:-100])
    key = {"STREAM_DEDUP__SCALE__SCOPE": "key"}
    first_log = tmp_path / "first.log"
    first = start_service(settings, tmp_path / "first", first_log, env=key)
    try:
        wait_drained(settings, 240, alive=lambda: first.poll() is None)
    finally:
        stop_service(first, first_log, timeout_s=120)
    produce(kafka_bootstrap, topics["input"], lines[-100:])  # a record to restore for
    log = tmp_path / "second.log"
    proc = start_service(settings, tmp_path / "second", log, env=key)
    try:
        code, took, text = _stop_after(proc, log, "partitions assigned", 0.5)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "partition restored" not in text.split("SIGTERM received")[0], (
        "the restore ended before SIGTERM: it tested nothing")
    assert code == 0 and took < SHUTDOWN_S, (code, took, text[-3000:])
    assert "Traceback" not in text
    said = _one_stop_line(text)
    assert len(said) == 1 and "restor" in said[0], said
    print(f"\nSIGTERM mid-restore: exit {code} after {took:.1f} s; said: {said[0][:200]}")


def test_a_stop_during_a_rebalance_ends_within_the_timeout_and_loses_nothing(
        kafka_bootstrap, unique_topic, tmp_path) -> None:
    """A second member joins while the first reads a backlog; the first gets SIGTERM as soon as
    its partitions are revoked (the group is rebalancing: it settled its batch and waits for
    the new assignment). It stops within the timeout without a word beyond INFO, and the
    second member takes everything over: nothing is lost."""
    topics = make_topics(unique_topic, 6)
    settings = _settings(kafka_bootstrap, topics, poll_batch_size=200)
    _, lines = stream_lines(30_000)
    produce(kafka_bootstrap, topics["input"], lines)
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    first = start_service(settings, tmp_path / "first", first_log)
    second = None
    try:
        wait_lag_below(settings, len(lines) - 2_000, first, timeout_s=120)
        second = start_service(settings, tmp_path / "second", second_log)
        code, took, text = _stop_after(first, first_log, "partitions revoked", 0.0)
        wait_drained(settings, 240, alive=lambda: second.poll() is None)
    finally:
        if first.poll() is None:
            first.kill()
        if second is not None:
            stop_service(second, second_log, timeout_s=120)
    assert code == 0 and took < SHUTDOWN_S, (code, took, text[-3000:])
    assert "Traceback" not in text
    assert not _one_stop_line(text), _one_stop_line(text)
    emitted = Counter(id_of(r.value) for t in ("output", "duplicates", "dead")
                      for r in read_topic(kafka_bootstrap, topics[t]))
    missing = {id_of(raw) for raw in lines} - set(emitted)
    assert not missing, f"{len(missing)} input ids lost, e.g. {sorted(missing)[:5]}"
    twice = sum(n - 1 for n in emitted.values() if n > 1)
    print(f"\nSIGTERM during a rebalance: exit {code} after {took:.1f} s; {len(lines)} records, "
          f"0 lost, {twice} emitted twice")
