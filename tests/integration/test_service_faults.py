"""Faults on the real broker: the service killed with SIGKILL mid-run, a second member joining
mid-run (a rebalance), and the broker killed with SIGKILL mid-run. Nothing may be lost; the service runs as `stream-dedup run` in a subprocess.

One input partition: the service then reads in file order, so its outputs must match file mode
exactly (multi-partition runs are covered by test_service.py).
"""

from __future__ import annotations

import dataclasses
import random
import subprocess
import time
import uuid
from collections import Counter

import pytest
from kafka_helpers import (
    REPO,
    check_nothing_lost,
    id_of,
    make_topics,
    produce,
    read_topic,
    service_settings,
    start_service,
    stop_service,
    stream_lines,
    wait_drained,
    wait_lag_below,
)

from stream_dedup.kafka.topics import group_lag

pytestmark = pytest.mark.integration


def _preloaded(kafka_bootstrap, unique_topic, records: int, partitions: int, group: str,
               **kafka: object):
    """(lines, topics, settings): `records` lines of the stream already in a fresh input topic
    of `partitions`, and settings for a fresh group named after `group`."""
    _, lines = stream_lines(records)
    topics = make_topics(unique_topic, input_partitions=partitions)
    settings = service_settings(kafka_bootstrap, topics, f"{group}-{uuid.uuid4().hex[:8]}",
                                **kafka)
    produce(kafka_bootstrap, topics["input"], lines)
    return lines, topics, settings


@pytest.mark.parametrize("engine_process", ["inline", "child"])
def test_kill9_the_service_three_times(kafka_bootstrap, unique_topic, tmp_path, engine_process):
    """With the engine in the service's process and in a child of it (whose state a restarted
    service opens once the killed one's child let go of it)."""
    lines, topics, settings = _preloaded(kafka_bootstrap, unique_topic, 20_000, 1, "crash",
                                         poll_batch_size=500)
    settings = dataclasses.replace(
        settings, engine=dataclasses.replace(settings.engine, process=engine_process))
    state, log = tmp_path / "state", tmp_path / "service.log"
    rng = random.Random()
    # A random point in each of three stretches of the run, the last one far enough from its
    # end that the service (batches of 500, ~0.05 s each on a quiet machine) cannot finish
    # between the point and the kill: a kill after the last commit would test nothing.
    points = [rng.randint(13_000, 18_000), rng.randint(8_000, 12_000), rng.randint(3_000, 7_000)]
    kills = []
    for lag_point in points:
        proc = start_service(settings, state, log)
        try:
            wait_lag_below(settings, lag_point, proc, timeout_s=120)
            time.sleep(rng.uniform(0.0, 0.1))  # anywhere in the next batches: poll .. commit
        finally:
            proc.kill()  # SIGKILL: no flush, no commit, no close
            proc.wait()
        lag = group_lag(settings.kafka.bootstrap_servers, settings.kafka.group_id,
                        settings.kafka.input_topics)
        assert lag > 0, f"the kill came after the last commit (point: lag {lag_point})"
        kills.append(len(lines) - lag)  # committed when it was killed
    proc = start_service(settings, state, log)
    try:
        wait_drained(settings, timeout_s=120, alive=lambda: proc.poll() is None)
    finally:
        stop_service(proc, log)
    twice, distinct = check_nothing_lost(settings, topics, lines)
    print(f"\ncrash test (engine {engine_process}): {len(lines)} records, SIGKILL with {kills} committed; 0 lost, "
          f"{distinct} ids emitted, {twice} records emitted twice (replayed after a kill)")


def test_a_second_member_joins_mid_run_and_the_revoked_work_is_committed(
        kafka_bootstrap, unique_topic, tmp_path):
    """Rebalance: a second `stream-dedup run` joins the group while the first one is busy. The
    first settles its batch in flight before its partitions are revoked (acknowledged and
    committed), so the partitions move with nothing pending: nothing is lost and nothing is
    emitted twice. Each member has its own index (scope process), so which copies are caught
    across members is not checked here."""
    lines, topics, settings = _preloaded(kafka_bootstrap, unique_topic, 30_000, 6, "join",
                                         poll_batch_size=200)
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    first = start_service(settings, tmp_path / "first", first_log)
    second = None
    try:
        # The first member is mid-stream, always with a batch in flight, when the second joins.
        wait_lag_below(settings, len(lines) - 2_000, first, timeout_s=120)
        second = start_service(settings, tmp_path / "second", second_log)
        wait_drained(settings, timeout_s=180,
                     alive=lambda: first.poll() is None and second.poll() is None)
    finally:
        stop_service(first, first_log)
        if second is not None:
            stop_service(second, second_log)
    text = first_log.read_text(errors="replace")
    assert "partitions revoked" in text, "the second member did not take partitions"
    assert "partitions assigned" in second_log.read_text(errors="replace")
    bootstrap = settings.kafka.bootstrap_servers
    emitted = Counter(id_of(r.value) for t in ("output", "duplicates", "dead")
                      for r in read_topic(bootstrap, topics[t]))
    missing = {id_of(raw) for raw in lines} - set(emitted)
    assert not missing, f"{len(missing)} input ids lost, e.g. {sorted(missing)[:5]}"
    twice = sum(n - 1 for n in emitted.values() if n > 1)
    refused = text.count("commit refused")
    print(f"\nsecond member joined: {len(lines)} records, 0 lost, {twice} emitted twice, "
          f"{refused} commits refused")
    assert twice == 0 and refused == 0, "work on revoked partitions was not committed first"


def test_broker_killed_and_restarted_mid_run(kafka_bootstrap, unique_topic, tmp_path):
    lines, topics, settings = _preloaded(kafka_bootstrap, unique_topic, 12_000, 1, "broker",
                                         poll_batch_size=200)
    log = tmp_path / "service.log"
    proc = start_service(settings, tmp_path / "state", log)
    script = ["bash", str(REPO / "deploy" / "kafka.sh")]
    try:
        wait_lag_below(settings, int(len(lines) * 0.8), proc, timeout_s=120)
        subprocess.run([*script, "kill9"], check=True, capture_output=True, timeout=60)
        time.sleep(2)
        assert proc.poll() is None, "the service died with the broker"
        subprocess.run([*script, "start"], check=True, capture_output=True, timeout=180)
        wait_drained(settings, timeout_s=180, alive=lambda: proc.poll() is None)
    finally:
        # The broker must be up for later tests whatever happened here.
        subprocess.run([*script, "start"], check=False, capture_output=True, timeout=180)
        stop_service(proc, log)
    twice, _ = check_nothing_lost(settings, topics, lines)
    text = log.read_text(errors="replace")
    said = ("not acknowledged yet", "failed, retrying", "re-sending")
    assert any(s in text for s in said), "the outage was not logged"
    print(f"\nbroker restart: {len(lines)} records, 0 lost, {twice} emitted twice")
