"""`scale.scope: key` on the real broker: two `stream-dedup run` processes share 6 keyed input
partitions, each partition's state restored from its compacted changelog topic when it moves.

The keys are channels given to the dev stream's messages by a hash of their id, so every key's
messages sit in one partition in file order, and the right answer is the engine run over each
key's messages alone, in file order: the service must give exactly those verdicts, lose nothing
and, after one process is killed with SIGKILL mid-run, the other must restore the dead one's
partitions from their changelogs and carry on.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
import uuid
import zlib
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from kafka import KafkaProducer
from kafka_helpers import (
    id_of,
    make_topics,
    read_topic,
    service_env,
    service_settings,
    stop_service,
    stream_lines,
    wait_drained,
)

from stream_dedup.config import ScaleSettings
from stream_dedup.decode import decode
from stream_dedup.engine import Engine
from stream_dedup.kafka.headers import MATCHED_ID, VERDICT, as_dict
from stream_dedup.kafka.topics import group_lag
from stream_dedup.records import Message
from stream_dedup.state import MemoryStore

pytestmark = pytest.mark.integration
CHANNELS = 12
RECORDS = 12_000


def channel_of(raw: bytes) -> bytes:
    return b"ch%d" % (zlib.crc32(id_of(raw).encode()) % CHANNELS)


def produce_keyed(bootstrap: str, topic: str, lines: list[bytes]) -> None:
    """In file order, keyed by channel (the default partitioner: one partition per key)."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=20)
    try:
        for raw in lines:
            producer.send(topic, key=channel_of(raw), value=raw)
        producer.flush()
    finally:
        producer.close()


def per_key_verdicts(settings, lines: list[bytes]) -> dict[str, tuple[bool, str | None]]:
    """id -> (duplicate?, matched id) from one engine per key over that key's messages, in file
    order, without scoping: the ground truth."""
    by_key: dict[bytes, list[Message]] = defaultdict(list)
    for n, raw in enumerate(lines):
        msg = decode(raw, "t", str(n), 0, settings.input)
        assert isinstance(msg, Message)
        by_key[channel_of(raw)].append(msg)
    out = {}
    for messages in by_key.values():
        engine = Engine(settings, MemoryStore())
        for i in range(0, len(messages), 1000):
            for v in engine.process(messages[i:i + 1000]):
                out[v.id] = (v.is_duplicate, v.matched_id if v.is_duplicate else None)
    return out


def start(settings, state: Path, log: Path) -> subprocess.Popen:
    """`stream-dedup run` with `scale.scope: key` as a child process, its log in `log`."""
    env = {**service_env(settings, state), "STREAM_DEDUP__SCALE__SCOPE": "key"}
    out = open(log, "ab")  # noqa: SIM115 (inherited by the child)
    return subprocess.Popen([sys.executable, "-m", "stream_dedup.cli", "run"], env=env,
                            stdout=out, stderr=out)


def wait_for(what: str, check, proc, timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert proc.poll() is None, f"service exited with {proc.returncode}, waiting: {what}"
        assert time.monotonic() < deadline, f"timed out waiting: {what}"
        time.sleep(0.1)


def assigned(log: Path) -> set[str]:
    """The partitions the last assignment in `log` gave that process."""
    found = re.findall(r"partitions assigned partitions=(\S+)", log.read_text(errors="replace"))
    return set() if not found or found[-1] == "-" else set(found[-1].split(","))


def restored(log: Path, after: int = 0) -> dict[str, int]:
    """partition -> changelog records of its last restore in `log` (from character `after`)."""
    text = log.read_text(errors="replace")[after:]
    return {p: int(n) for p, n in re.findall(r"partition restored partition=(\S+) .*?records=(\d+)",
                                             text)}


@pytest.fixture
def changelogs(kafka_admin):
    """Names of the changelog topics the services create, deleted when the test ends."""
    names: list[str] = []
    yield names
    kafka_admin.delete_topics(names, raise_errors=False)


def test_key_scope_two_processes_kill9_one(kafka_bootstrap, unique_topic, changelogs, tmp_path):
    _, lines = stream_lines(RECORDS)
    topics = make_topics(unique_topic, input_partitions=6)
    settings = service_settings(kafka_bootstrap, topics, f"key-{uuid.uuid4().hex[:8]}",
                                poll_batch_size=300)
    changelogs.append(ScaleSettings().changelog_for(settings.kafka.group_id, topics["input"]))
    produce_keyed(kafka_bootstrap, topics["input"], lines)
    k = settings.kafka
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    survivor, victim = (start(settings, tmp_path / f"state-{n}", log)
                        for n, log in zip("ab", logs, strict=True))
    try:
        wait_for("both processes own partitions and b decided some records",
                 lambda: all(assigned(log) for log in logs) and restored(logs[1]), victim)
        wait_for("a third of the input committed",
                 lambda: group_lag(k.bootstrap_servers, k.group_id, k.input_topics)
                 < RECORDS * 2 // 3, victim)
        moved = assigned(logs[1])
        killed_at = len(logs[0].read_text(errors="replace"))
        victim.kill()  # SIGKILL: no flush, no commit, no leaving the group
        victim.wait()
        wait_drained(settings, timeout_s=300, alive=lambda: survivor.poll() is None)
    finally:
        if victim.poll() is None:
            victim.kill()
        stop_service(survivor, logs[0])
    survivor_log = logs[0].read_text(errors="replace")
    # The victim's partitions moved to the survivor, which restored each from its changelog.
    back = restored(logs[0], after=killed_at)
    assert moved <= set(back), f"not restored by the survivor: {moved - set(back)}"
    assert any(back[p] > 0 for p in moved), f"nothing restored: {back}"
    assert "Traceback" not in survivor_log

    unique = read_topic(k.bootstrap_servers, topics["output"])
    dups = read_topic(k.bootstrap_servers, topics["duplicates"])
    assert not read_topic(k.bootstrap_servers, topics["dead"])
    emitted = Counter(id_of(r.value) for r in unique + dups)
    ids = [id_of(raw) for raw in lines]
    missing = set(ids) - set(emitted)
    assert not missing, f"{len(missing)} input ids lost, e.g. {sorted(missing)[:5]}"
    truth = per_key_verdicts(settings, lines)
    got = {}
    for r in unique + dups:
        headers = as_dict(r.headers)
        dup = headers[VERDICT] in ("exact", "near")
        got.setdefault(id_of(r.value), set()).add((dup, headers[MATCHED_ID] if dup else None))
    wrong = {i: (sorted(v), truth[i]) for i, v in got.items() if v != {truth[i]}}
    assert not wrong, f"{len(wrong)} verdicts differ from the per-key engine: " \
                      f"{list(wrong.items())[:5]}"
    twice = sum(n - 1 for n in emitted.values() if n > 1)
    print(f"\nscope key: {len(lines)} records, {CHANNELS} keys, 6 partitions, 2 processes; "
          f"victim owned {sorted(moved)}; survivor restored "
          f"{ {p: back[p] for p in sorted(moved)} } changelog records; 0 lost; "
          f"{sum(d for d, _ in truth.values())} duplicates as per key; "
          f"{twice} records emitted twice")
