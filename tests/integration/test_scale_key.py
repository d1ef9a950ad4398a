"""`scale.scope: key` on the real broker: two `stream-dedup run` processes share 6 keyed input
partitions, each partition's state restored from its compacted changelog topic when it moves;
a process stopped cleanly and started again on the same directories restores only what its
partitions' changelogs gained meanwhile (the local checkpoint); and a broker killed while
changelog records wait for their acknowledgement costs no exit and loses nothing, even when the
outage outlasts the producer's delivery timeout (the store sends the expired records again); and
a write torn on the broker (its records without its end) is set back by the next owner.

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
import threading
import time
import uuid
import zlib
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka_helpers import (
    REPO,
    id_of,
    make_topics,
    read_topic,
    service_env,
    service_settings,
    stop_service,
    stream_lines,
    wait_drained,
)

from stream_dedup.config import KafkaSettings, ScaleSettings, Settings, StateSettings
from stream_dedup.decode import decode
from stream_dedup.engine.batch import Engine
from stream_dedup.engine.stored import TABLES
from stream_dedup.kafka.headers import MATCHED_ID, VERDICT, as_dict
from stream_dedup.kafka.retry import Backoff
from stream_dedup.kafka.topics import admin, group_lag
from stream_dedup.records import Message
from stream_dedup.scale import checkpoint
from stream_dedup.scale.changelog import WRITE_END, ChangelogStore, changelog_records
from stream_dedup.scale.restore import (
    changelog_end,
    changelog_producer,
    ensure_changelog_topics,
    open_state,
    restore,
)
from stream_dedup.state import MemoryStore, WriteSet

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


def per_key_verdicts(settings, lines: list[bytes]) -> dict[str, tuple[str, str | None]]:
    """id -> (decision, matched id) from one engine per key over that key's messages, in file
    order, without scoping: the ground truth."""
    by_key: dict[bytes, list[Message]] = defaultdict(list)
    for n, raw in enumerate(lines):
        msg = decode(raw, "t", str(n), 0, settings.input)
        assert isinstance(msg, Message)
        by_key[channel_of(raw)].append(msg)
    out = {}
    for messages in by_key.values():
        engine = Engine(settings, MemoryStore(TABLES))
        for i in range(0, len(messages), 1000):
            for v in engine.process(messages[i:i + 1000]):
                out[v.id] = (str(v.decision), v.matched_id if v.is_duplicate else None)
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


OWNERSHIP = re.compile(r"partitions (assigned|revoked|lost)\b.*? partitions=(\S+)")


def assigned(log: Path) -> set[str]:
    """The partitions that process owns by its log: those of its last assignment, none while a
    revoke or loss logged after it awaits the next one (a rebalance under way)."""
    found = OWNERSHIP.findall(log.read_text(errors="replace"))
    if not found or found[-1][0] != "assigned" or found[-1][1] == "-":
        return set()
    return set(found[-1][1].split(","))


def settled(logs: list[Path], partitions: int) -> bool:
    """Every process owns some partitions, none twice, all of them owned: no rebalance under
    way (a process started late joins after the other took every partition)."""
    owned = [assigned(log) for log in logs]
    return (all(owned) and sum(map(len, owned)) == partitions
            and len(set().union(*owned)) == partitions)


def ownership(logs: list[Path]) -> str:
    """The assignment, revoke, loss and restore lines of each log, for a failure's message."""
    return "\n".join(f"{log.name}: {line}" for log in logs
                     for line in log.read_text(errors="replace").splitlines()
                     if OWNERSHIP.search(line) or "partition restored" in line)


def restored(log: Path, after: int = 0) -> dict[str, int]:
    """partition -> changelog records of its last restore in `log` (from character `after`)."""
    return {p: n for p, (n, _) in restores(log, after).items()}


def restores(log: Path, after: int = 0) -> dict[str, tuple[int, int]]:
    """partition -> (changelog records, offset restored from) of its last restore in `log`."""
    text = log.read_text(errors="replace")[after:]
    found = re.findall(r"partition restored partition=(\S+) .*?records=(\d+) .*?"
                       r"from_offset=(\d+)", text)
    return {p: (int(n), int(start)) for p, n, start in found}


def tracebacks_through_ours(text: str) -> list[str]:
    """The log records of `text` with a traceback through stream_dedup's code. kafka-python
    3.0.12's network layer logs tracebacks of its own (a read task on a socket closed under it
    while the consumer leaves the group at shutdown): not ours, and the service goes on."""
    records = re.split(r"\n(?=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)", text)
    return [r for r in records if "stream_dedup" in r.partition("Traceback")[2]]


def check_verdicts(settings, topics: dict[str, str], lines: list[bytes]
                   ) -> tuple[int, dict[str, tuple[str, str | None]]]:
    """Nothing lost, nothing dead, every decision (exact, near, unique) and matched id that of
    an engine per key;
    returns the records emitted more than once and the per-key truth."""
    k = settings.kafka
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
        decision = headers[VERDICT]
        got.setdefault(id_of(r.value), set()).add(
            (decision, headers[MATCHED_ID] if decision in ("exact", "near") else None))
    wrong = {i: (sorted(v), truth[i]) for i, v in got.items() if v != {truth[i]}}
    assert not wrong, f"{len(wrong)} verdicts differ from the per-key engine: " \
                      f"{list(wrong.items())[:5]}"
    return sum(n - 1 for n in emitted.values() if n > 1), truth


def uncommitted(settings) -> set[str]:
    """The input partitions ("topic/p") with records the group has not committed."""
    return {p for p, (done, end) in offsets(settings).items() if done < end}


def offsets(settings) -> dict[str, tuple[int, int]]:
    """Input partition ("topic/p") -> (the group's committed offset, 0 before any; its end)."""
    k = settings.kafka
    consumer = KafkaConsumer(bootstrap_servers=k.bootstrap_servers)
    try:
        tps = [TopicPartition(t, p) for t in k.input_topics
               for p in sorted(consumer.partitions_for_topic(t) or ())]
        ends = consumer.end_offsets(tps)
    finally:
        consumer.close()
    with admin(k.bootstrap_servers) as client:
        committed = client.list_group_offsets({k.group_id: tps}).get(k.group_id, {})
    return {f"{tp.topic}/{tp.partition}": (max(getattr(committed.get(tp), "offset", 0), 0),
                                           ends[tp]) for tp in tps}


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
                 lambda: settled(logs, 6) and restored(logs[1]), victim)
        # b must commit records of its own before it dies, or a has nothing of b's to restore
        # (a process started late finds the other deciding every partition already).
        before = offsets(settings)
        wait_for("a third of the input committed, b's partitions moved on but not finished",
                 lambda: group_lag(k.bootstrap_servers, k.group_id, k.input_topics)
                 < RECORDS * 2 // 3 and any(before[p][0] < done < end for p, (done, end)
                                            in offsets(settings).items()
                                            if p in assigned(logs[1])), victim)
        wait_for("no rebalance under way", lambda: settled(logs, 6), victim)
        moved = assigned(logs[1])
        killed_at = len(logs[0].read_text(errors="replace"))
        victim.kill()  # SIGKILL: no flush, no commit, no leaving the group
        victim.wait()
        moved &= uncommitted(settings)  # those it had finished stay finished
        wait_drained(settings, timeout_s=300, alive=lambda: survivor.poll() is None)
    finally:
        if victim.poll() is None:
            victim.kill()
        stop_service(survivor, logs[0])
    survivor_log = logs[0].read_text(errors="replace")
    # The victim's unfinished partitions moved to the survivor, which restored each from its
    # changelog.
    back = restored(logs[0], after=killed_at)
    assert moved, "the victim had finished its partitions before it was killed"
    assert moved <= set(back), \
        f"not restored by the survivor: {moved - set(back)}\n{ownership(logs)}"
    assert any(back[p] > 0 for p in moved), f"nothing restored: {back}"
    assert not tracebacks_through_ours(survivor_log), tracebacks_through_ours(survivor_log)

    twice, truth = check_verdicts(settings, topics, lines)
    print(f"\nscope key: {len(lines)} records, {CHANNELS} keys, 6 partitions, 2 processes; "
          f"victim owned {sorted(moved)}; survivor restored "
          f"{ {p: back[p] for p in sorted(moved)} } changelog records; 0 lost; "
          f"{sum(d != 'unique' for d, _ in truth.values())} duplicates as per key; "
          f"{twice} records emitted twice; "
          f"{survivor_log.count('a crash cut short set back')} torn writes set back")


def run_drained(settings, state: Path, log: Path, topic: str, lines: list[bytes]) -> None:
    """Produce `lines`, run one process until the group has read them all, stop it cleanly."""
    produce_keyed(settings.kafka.bootstrap_servers, topic, lines)
    proc = start(settings, state, log)
    try:
        wait_drained(settings, timeout_s=300, alive=lambda: proc.poll() is None)
    finally:
        stop_service(proc, log)


def test_key_scope_clean_restart_restores_only_the_tail(kafka_bootstrap, unique_topic,
                                                        changelogs, tmp_path):
    """a decides a third and stops cleanly (a checkpoint per partition); b, on a directory of
    its own, decides the next third (restoring in full); a, started again on its directories,
    restores only b's records and decides the last third on the same state."""
    _, lines = stream_lines(6_000)
    thirds = [lines[:2_000], lines[2_000:4_000], lines[4_000:]]
    topics = make_topics(unique_topic, input_partitions=3)
    settings = service_settings(kafka_bootstrap, topics, f"ckpt-{uuid.uuid4().hex[:8]}",
                                poll_batch_size=300)
    changelog = ScaleSettings().changelog_for(settings.kafka.group_id, topics["input"])
    changelogs.append(changelog)
    state_a = tmp_path / "state-a"
    dirs = {p: str(state_a / f"{topics['input']}-{p}") for p in range(3)}
    run_drained(settings, state_a, tmp_path / "a1.log", topics["input"], thirds[0])
    left_at = {p: checkpoint.read(d) for p, d in dirs.items()}
    assert all(c is not None and c.topic == changelog for c in left_at.values()), left_at
    run_drained(settings, tmp_path / "state-b", tmp_path / "b.log", topics["input"], thirds[1])
    full = restores(tmp_path / "b.log")
    assert full and all(n > 0 and start == 0 for n, start in full.values()), full
    ends = {p: changelog_end(settings.kafka, changelog, p) for p in dirs}
    run_drained(settings, state_a, tmp_path / "a2.log", topics["input"], thirds[2])
    tail = {int(p.rsplit("/", 1)[1]): got for p, got in restores(tmp_path / "a2.log").items()}
    assert set(tail) == set(dirs), tail
    for p, (records, start) in tail.items():
        assert start == left_at[p].offset, (p, start, left_at[p])
        assert records == ends[p] - left_at[p].offset > 0, (p, records, ends[p], left_at[p])
    twice, _ = check_verdicts(settings, topics, lines)
    print(f"\ncheckpoint: {len(lines)} records; restart restored "
          f"{sum(n for n, _ in tail.values())} tail records of "
          f"{sum(ends.values())} in the changelogs; 0 lost; {twice} emitted twice")


CHANGELOG_RETRY = re.compile(r"flushing changelog \S+ failed, retrying")
# What the service says when the broker goes away, whichever step it is in.
OUTAGE = re.compile(r"stream_dedup\.\S+: .*(failed, retrying|not acknowledged yet|"
                    r"delivery failed)")


def test_key_scope_broker_killed_while_the_changelog_waits(kafka_bootstrap, unique_topic,
                                                           changelogs, tmp_path):
    """The broker is killed (SIGKILL) mid-run and restarted once the service noticed; until
    the outage caught a changelog flush (each attempt waits 5 s here: the flush is retried
    and its records re-sent), up to 3 times. The service never exits, and ends with every
    verdict right and nothing lost."""
    _, lines = stream_lines(RECORDS)
    topics = make_topics(unique_topic, input_partitions=3)
    settings = service_settings(kafka_bootstrap, topics, f"outage-{uuid.uuid4().hex[:8]}",
                                poll_batch_size=200, produce_timeout_s=5.0)
    changelogs.append(ScaleSettings().changelog_for(settings.kafka.group_id, topics["input"]))
    produce_keyed(kafka_bootstrap, topics["input"], lines)
    k = settings.kafka
    log = tmp_path / "service.log"
    proc = start(settings, tmp_path / "state", log)
    script = ["bash", str(REPO / "deploy" / "kafka.sh")]

    def lag() -> int:
        return group_lag(k.bootstrap_servers, k.group_id, k.input_topics)

    try:
        wait_for("a sixth of the input committed", lambda: lag() < RECORDS * 5 // 6, proc)
        for _ in range(3):
            before, since = lag(), len(log.read_text(errors="replace"))
            subprocess.run([*script, "kill9"], check=True, capture_output=True, timeout=60)
            wait_for("the outage noticed", lambda s=since: OUTAGE.search(
                log.read_text(errors="replace")[s:]), proc, timeout_s=120)
            caught = CHANGELOG_RETRY.search(log.read_text(errors="replace")[since:])
            subprocess.run([*script, "start"], check=True, capture_output=True, timeout=180)
            if caught:
                break
            wait_for("progress after the restart", lambda b=before: lag() < b, proc)
        else:
            pytest.fail("3 broker kills, none caught a changelog flush")
        wait_drained(settings, timeout_s=300, alive=lambda: proc.poll() is None)
    finally:
        # The broker must be up for later tests whatever happened here.
        subprocess.run([*script, "start"], check=False, capture_output=True, timeout=180)
        stop_service(proc, log)
    twice, _ = check_verdicts(settings, topics, lines)
    text = log.read_text(errors="replace")
    assert not re.search(r'File "[^"]*/stream_dedup/', text), "a traceback of the service"
    print(f"\nbroker outage: {len(lines)} records, {len(CHANGELOG_RETRY.findall(text))} "
          f"changelog flush retries logged, 0 lost, {twice} emitted twice")


def test_changelog_records_that_expired_in_an_outage_are_sent_again(kafka_bootstrap,
                                                                    changelogs):
    """Records sent while the broker is dead expire (delivery timeout 30 s): the flush keeps
    retrying, sends them again once the broker is back, and the changelog then restores into
    exactly the local store."""
    k = KafkaSettings(bootstrap_servers=kafka_bootstrap, produce_timeout_s=5.0)
    topic = f"outage-changelog-{uuid.uuid4().hex[:8]}"
    changelogs.append(topic)
    ensure_changelog_topics(k, {topic: 1}, 1 << 20)
    producer = changelog_producer(k, 1 << 20)
    expired = threading.Event()  # a record failed (not just a wait that ran out)

    def on_retry(_what: str, exc: BaseException) -> None:
        if "no acknowledgement within" not in str(exc):
            expired.set()

    store = ChangelogStore(MemoryStore(TABLES), producer, topic, 0, Backoff(0.5, 5.0,
                                                                      on_retry=on_retry))

    def write(n: int, tag: bytes) -> None:
        w = WriteSet()
        for i in range(n):
            w.put("docs", b"%06d" % (i % 700), b"%s-%d" % (tag, i))  # keys written twice
        store.write(w)

    write(500, b"before")
    store.flush(5.0)
    script = ["bash", str(REPO / "deploy" / "kafka.sh")]
    errors: list[BaseException] = []

    def flush() -> None:
        try:
            store.flush(5.0)
        except BaseException as exc:
            errors.append(exc)

    flusher = threading.Thread(target=flush)
    try:
        subprocess.run([*script, "kill9"], check=True, capture_output=True, timeout=60)
        write(1000, b"during")
        flusher.start()
        assert expired.wait(180), "no record expired during the outage"
    finally:
        subprocess.run([*script, "start"], check=True, capture_output=True, timeout=180)
    flusher.join(300)
    assert not flusher.is_alive() and not errors, errors
    assert store.in_sync and store.end_offset >= 1500  # (re-sent acknowledged ones: more)
    rebuilt = MemoryStore(TABLES)
    report = restore(rebuilt, k, topic, 0, 60.0, 1 << 20)
    producer.close()
    assert report.records == store.end_offset
    for cf in TABLES:
        assert list(rebuilt.scan(cf, b"", b"\xff" * 8)) == list(store.scan(cf, b"", b"\xff" * 8))


def test_a_write_torn_on_the_broker_is_set_back_by_the_next_owner(kafka_bootstrap, changelogs,
                                                                  tmp_path):
    """A write whose records reached the changelog without its end (the process died while
    sending them): the next owner restores the writes before it and sends the torn keys'
    earlier values (or tombstones) and an end after them, so a restore after its next write,
    whose end follows the torn records, still gets the state without them."""
    k = KafkaSettings(bootstrap_servers=kafka_bootstrap)
    settings = Settings(kafka=k, state=StateSettings(backend="memory"))
    topic = f"torn-changelog-{uuid.uuid4().hex[:8]}"
    changelogs.append(topic)
    ensure_changelog_topics(k, {topic: 1}, 1 << 20)
    producer = changelog_producer(k, 1 << 20)
    try:
        first = ChangelogStore(MemoryStore(TABLES), producer, topic, 0)
        whole = WriteSet()
        for i in range(300):
            whole.put("docs", b"%06d" % i, b"whole-%d" % i)
        first.write(whole)
        first.flush(30.0)
        torn = WriteSet()
        for i in range(200, 400):  # 100 keys changed, 100 new
            torn.put("docs", b"%06d" % i, b"torn-%d" % i)
        records = changelog_records(first.inner, torn)
        assert records[-1][0] == WRITE_END
        for key, value in records[:-1]:
            producer.send(topic, key=key, value=value, partition=0)
        producer.flush(30.0)
        expected = [b"whole-%d" % i for i in range(300)] + [None] * 100
        keys = [b"%06d" % i for i in range(400)]
        store, report = open_state(settings, str(tmp_path / "a"), producer, topic, 0)
        assert len(report.torn) == 200 and report.records == 301
        assert store.get_many("docs", keys) == expected
        assert store.in_sync and store.end_offset == changelog_end(k, topic, 0) == 301 + 200 + 201
        later = WriteSet()  # its end follows the torn records: set back, they stay set back
        later.put("docs", b"later", b"1")
        store.write(later)
        store.flush(30.0)
        again, report = open_state(settings, str(tmp_path / "b"), producer, topic, 0)
        assert report.torn == ()
        assert again.get_many("docs", [*keys, b"later"]) == [*expected, b"1"]
    finally:
        producer.close()
