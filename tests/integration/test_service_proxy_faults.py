"""Network faults between the service and a real broker, injected by a Toxiproxy proxy that every
connection goes through (the broker advertises the proxy's address): 500 ms of latency on every
answer, connections reset again and again, and all traffic black-holed for 30 s (bytes accepted
and dropped, connections left open: what a dead switch or a firewall dropping packets does).

`stream-dedup run` (a subprocess) reads a backlog of one partition with small batches, so that
each fault meets it mid-stream with a batch in flight. In every case it must recover by itself
while the fault goes on or once it is removed, lose nothing, and its outputs must be those of
file mode: in = out + duplicates + dead letters.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import ProxiedBroker
from kafka_helpers import (
    check_nothing_lost,
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

from stream_dedup.config import Settings
from stream_dedup.kafka.topics import group_lag

pytestmark = pytest.mark.integration
RECORDS = 30_000
DRAIN_S = 300  # a loaded 2-core host: generous, and still bounded


def _backlog(
    broker: ProxiedBroker, proxied_topic: Callable[..., str], name: str, records: int
) -> tuple[list[bytes], dict[str, str], Settings]:
    _, lines = stream_lines(records)
    topics = make_topics(proxied_topic, input_partitions=1)
    settings = service_settings(
        broker.bootstrap, topics, f"{name}-{uuid.uuid4().hex[:8]}", poll_batch_size=100
    )
    produce(broker.bootstrap, topics["input"], lines)
    return lines, topics, settings


def _lag(settings: Settings) -> int:
    k = settings.kafka
    return group_lag(k.bootstrap_servers, k.group_id, k.input_topics)


def _recovered(
    settings: Settings,
    topics: dict[str, str],
    lines: list[bytes],
    proc: subprocess.Popen,
    log: Path,
    fault: str,
) -> None:
    """The service, still running after `fault`, reads everything by itself; then every input
    is in exactly one output topic, as file mode decides it."""
    started = time.monotonic()
    try:
        wait_drained(settings, DRAIN_S, alive=lambda: proc.poll() is None)
        drained_s = time.monotonic() - started
    finally:
        stop_service(proc, log, timeout_s=120)
    twice, distinct = check_nothing_lost(settings, topics, lines)
    bootstrap = settings.kafka.bootstrap_servers
    out, dups, dead = (
        len({r.value for r in read_topic(bootstrap, topics[t])})
        for t in ("output", "duplicates", "dead")
    )
    assert out + dups + dead == len(lines) == distinct, (out, dups, dead, len(lines))
    assert "Traceback" not in log.read_text(errors="replace")
    print(
        f"\n{fault}: {len(lines)} in = {out} out + {dups} duplicates + {dead} dead letters; "
        f"0 lost, {twice} records emitted twice; the rest read {drained_s:.0f} s after the "
        "fault ended"
    )


@contextmanager
def _mid_stream(
    broker: ProxiedBroker, proxied_topic: Callable[..., str], tmp_path: Path, fault: str,
    records: int = RECORDS,
) -> Iterator[tuple[Settings, subprocess.Popen, Path]]:
    """The service reading a backlog of `records` through the proxy, the first records of it
    read: the block injects `fault`; after it the service must read the rest by itself
    (`_recovered`)."""
    lines, topics, settings = _backlog(broker, proxied_topic, fault.split()[0], records)
    log = tmp_path / "service.log"
    proc = start_service(settings, tmp_path / "state", log)
    try:
        wait_lag_below(settings, records - 1_000, proc, timeout_s=120)
        yield settings, proc, log
    except BaseException:
        proc.kill()
        raise
    _recovered(settings, topics, lines, proc, log, fault)


def test_500_ms_of_latency_on_every_answer(proxied_kafka, proxied_topic, tmp_path) -> None:
    """The service goes on under the latency (slower: each batch waits for answers), and at
    full speed once it is gone."""
    with _mid_stream(proxied_kafka, proxied_topic, tmp_path, "latency of 500 ms for 20 s") as (
        settings,
        proc,
        _,
    ):
        with proxied_kafka.proxy.fault("latency", ("downstream",), latency=500):
            slow = _lag(settings)
            time.sleep(20)
            assert proc.poll() is None, "the service died of the latency"
            still = _lag(settings)
        assert 0 < still < slow, f"lag {slow} -> {still}: no progress with 500 ms of latency"


def test_connections_reset_again_and_again(proxied_kafka, proxied_topic, tmp_path) -> None:
    # a longer backlog: the service reads on between the resets, 14 s in all
    with _mid_stream(
        proxied_kafka, proxied_topic, tmp_path, "resets of every connection, 4 times",
        4 * RECORDS,
    ) as (settings, proc, _):
        for _ in range(4):  # every open connection and every new one reset for 1.5 s
            with proxied_kafka.proxy.fault("reset_peer", timeout=0):
                time.sleep(1.5)
            time.sleep(2.0)
            assert proc.poll() is None, "the service died of a reset connection"
        assert _lag(settings) > 0, "the stream ended before the resets did: they tested nothing"


def test_traffic_black_holed_for_30_s(proxied_kafka, proxied_topic, tmp_path) -> None:
    with _mid_stream(proxied_kafka, proxied_topic, tmp_path, "blackhole of 30 s") as (
        settings,
        proc,
        log,
    ):
        with proxied_kafka.proxy.fault("timeout", timeout=0):  # dropped, connections kept open
            time.sleep(30)
            assert proc.poll() is None, "the service died while the broker was silent"
        assert _lag(settings) > 0, "the stream ended before the black hole: it tested nothing"
    assert "WARNING" in log.read_text(errors="replace"), "the silent broker was not reported"
