"""`kafka.guarantee: exactly_once` on the real broker, read back by kcat with
`isolation.level=read_committed` (an independent client): the service killed with SIGKILL (once
inside a transaction's commit), the broker killed, a member paused past its session timeout and
fenced, another producer taking the transactional id, a transaction timing out, and a member
joining mid-run. Nothing may be lost and nothing committed twice.
"""

from __future__ import annotations

import dataclasses
import os
import random
import signal
import subprocess
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Producer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka_helpers import (
    REPO,
    file_mode_uniques,
    id_of,
    make_topics,
    produce,
    service_settings,
    start_service,
    stop_service,
    stream_lines,
    wait_drained,
)
from test_scale_key import channel_of, per_key_verdicts

from stream_dedup.config import ScaleSettings, Settings
from stream_dedup.decode import decode
from stream_dedup.kafka.topics import LagWatch, group_lag

pytestmark = pytest.mark.integration

# `stream-dedup run` whose `KILL_AT_COMMIT`-th transaction commit is cut by SIGKILL 2 ms in
# (waiting for acknowledgements, adding the offsets, or committing).
_KILLED_IN_COMMIT = """
import os, signal, sys, threading
from stream_dedup.kafka import transaction
from stream_dedup.cli.main import main
at, calls, commit = int(os.environ["KILL_AT_COMMIT"]), [0], transaction.TransactionalSink.commit
def cut(self, sent, offsets, group):
    calls[0] += 1
    if calls[0] == at:
        threading.Timer(0.002, os.kill, (os.getpid(), signal.SIGKILL)).start()
    return commit(self, sent, offsets, group)
transaction.TransactionalSink.commit = cut
sys.exit(main(["run"]))
"""

# `stream-dedup run` that stops itself (SIGSTOP) in its `STOP_AT_COMMIT`-th transaction, after
# the offsets were added and before the commit (`_call` runs init_transactions first, then the
# offsets and the commit of each transaction).
_STOPPED_BEFORE_COMMIT = """
import os, signal, sys
from stream_dedup.kafka import transaction
from stream_dedup.cli.main import main
at, calls, call = int(os.environ["STOP_AT_COMMIT"]), [0], transaction.TransactionalSink._call
def stop_before_commit(step):
    calls[0] += 1
    if calls[0] == 2 * at + 1:
        os.kill(os.getpid(), signal.SIGSTOP)
    return call(step)
transaction.TransactionalSink._call = staticmethod(stop_before_commit)
sys.exit(main(["run"]))
"""


def _eos(settings: Settings, **kafka: object) -> Settings:
    return dataclasses.replace(settings, kafka=dataclasses.replace(
        settings.kafka, guarantee="exactly_once", **kafka))


def _preloaded(bootstrap, unique_topic, records: int, partitions: int, group: str,
               **kafka: object):
    _, lines = stream_lines(records)
    topics = make_topics(unique_topic, input_partitions=partitions)
    settings = _eos(service_settings(bootstrap, topics, f"{group}-{uuid.uuid4().hex[:8]}"),
                    **kafka)
    produce(bootstrap, topics["input"], lines)
    return lines, topics, settings


def _committed_ids(kcat: str, bootstrap: str, topic: str) -> list[str]:
    """Ids of every committed record of `topic`, read by kcat with read_committed."""
    proc = subprocess.run(
        [kcat, "-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e", "-q",
         "-X", "isolation.level=read_committed", "-f", "%s\n"],
        capture_output=True, timeout=120, check=False, env={**os.environ, "LC_ALL": "C.UTF-8"})
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return [id_of(line) for line in proc.stdout.splitlines() if line.strip()]


def _check_exactly_once(kcat: str, settings: Settings, topics: dict[str, str], lines,
                        one_partition: bool) -> tuple[int, int]:
    """(lost, committed twice) over the output, duplicates and dead-letter topics; with one
    input partition the output must be file mode's uniques."""
    bootstrap = settings.kafka.bootstrap_servers
    unique = _committed_ids(kcat, bootstrap, topics["output"])
    seen = Counter(unique + _committed_ids(kcat, bootstrap, topics["duplicates"])
                   + _committed_ids(kcat, bootstrap, topics["dead"]))
    lost = len({id_of(raw) for raw in lines} - set(seen))
    twice = sum(n - 1 for n in seen.values() if n > 1)
    if one_partition:
        messages = [decode(raw, "t", str(n), 0, settings.input) for n, raw in enumerate(lines)]
        assert set(unique) == file_mode_uniques(settings, messages)
    return lost, twice


def _wait_lag_below(settings: Settings, threshold: int, alive, timeout_s: float) -> None:
    k = settings.kafka
    deadline = time.monotonic() + timeout_s
    with LagWatch(k.bootstrap_servers, k.group_id, k.input_topics) as watch:
        while (lag := watch.lag()) >= threshold:
            assert alive(), "the service exited"
            assert time.monotonic() < deadline, f"lag stayed at {lag} (waiting for < {threshold})"
            time.sleep(0.02)


def _transaction_open(bootstrap: str, topics: list[str]) -> bool:
    """Whether a transaction holding records of `topics` is open: a partition's last stable
    offset (the end a read_committed consumer sees) is behind its end."""
    ends = []
    for isolation in ("read_committed", "read_uncommitted"):
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation)
        try:
            tps = [TopicPartition(t, p) for t in topics
                   for p in sorted(consumer.partitions_for_topic(t) or ())]
            ends.append(consumer.end_offsets(tps))
        finally:
            consumer.close()
    return ends[0] != ends[1]


def _lines_of(log: Path, needle: str) -> list[str]:
    return [line for line in log.read_text(errors="replace").splitlines() if needle in line]


@pytest.mark.parametrize("engine_process", ["child", "inline"])
def test_kill9_five_times_one_inside_a_commit(kafka_bootstrap, unique_topic, kcat, tmp_path,
                                              engine_process):
    """Five SIGKILLs at random points of a 20,000-record backlog (the first inside the commit of
    a transaction), a restart after each: read_committed sees every input once, and the output
    equals file mode's uniques. With the engine in a child process and in the service's."""
    lines, topics, settings = _preloaded(kafka_bootstrap, unique_topic, 20_000, 1, "eos-kill",
                                         poll_batch_size=500)
    settings = dataclasses.replace(
        settings, engine=dataclasses.replace(settings.engine, process=engine_process))
    state, log = tmp_path / "state", tmp_path / "service.log"
    rng = random.Random()
    proc = start_service(settings, state, log, script=_KILLED_IN_COMMIT,
                         env={"KILL_AT_COMMIT": str(rng.randint(3, 8))})
    assert proc.wait(120) == -signal.SIGKILL, log.read_text(errors="replace")[-3000:]
    k = settings.kafka
    kills = [len(lines) - group_lag(k.bootstrap_servers, k.group_id, k.input_topics)]
    for lag_point in sorted(rng.sample(range(3_000, 17_000), 4), reverse=True):
        proc = start_service(settings, state, log)
        try:
            _wait_lag_below(settings, lag_point, lambda p=proc: p.poll() is None,
                            timeout_s=120)
            time.sleep(rng.uniform(0.0, 0.1))
        finally:
            proc.kill()
            proc.wait()
        lag = group_lag(k.bootstrap_servers, k.group_id, k.input_topics)
        assert lag > 0, f"the kill came after the last commit (point: lag {lag_point})"
        kills.append(len(lines) - lag)
    proc = start_service(settings, state, log)
    try:
        wait_drained(settings, timeout_s=120, alive=lambda: proc.poll() is None)
    finally:
        stop_service(proc, log)
    lost, twice = _check_exactly_once(kcat, settings, topics, lines, one_partition=True)
    print(f"\nexactly once, kill -9 (engine {engine_process}): {len(lines)} records, SIGKILL "
          f"with {kills} committed "
          f"(the first inside a commit); lost {lost}, committed twice {twice}")
    assert (lost, twice) == (0, 0)


def _preloaded_keyed(bootstrap, unique_topic, changelogs, group: str, **kafka: object):
    """(lines, topics, settings) of `scale.scope: key` under exactly_once: 20,000 lines of the
    stream in a 6-partition input topic, keyed by channel (`test_scale_key`)."""
    _, lines = stream_lines(20_000)
    topics = make_topics(unique_topic, input_partitions=6)
    settings = _eos(service_settings(bootstrap, topics, f"{group}-{uuid.uuid4().hex[:8]}"),
                    **kafka)
    settings = dataclasses.replace(settings, scale=ScaleSettings(scope="key"))
    changelogs.append(settings.scale.changelog_for(settings.kafka.group_id, topics["input"]))
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=20)
    try:
        for raw in lines:
            producer.send(topics["input"], key=channel_of(raw), value=raw)
        producer.flush()
    finally:
        producer.close()
    return lines, topics, settings


def _unlike_per_key(kcat: str, settings: Settings, topics: dict[str, str], lines) -> set[str]:
    """Ids whose committed verdict (output or duplicates) is not that of an engine per key."""
    truth = per_key_verdicts(settings, lines)
    unique = set(_committed_ids(kcat, settings.kafka.bootstrap_servers, topics["output"]))
    return {i for i, (dup, _) in truth.items() if (i in unique) == dup}


def test_kill9_five_times_scope_key(kafka_bootstrap, unique_topic, changelogs, kcat,
                                   tmp_path):
    """`scale.scope: key`, the changelog records in the outputs' transactions: five SIGKILLs
    (the first inside a commit), a restart after each on the same state. Each restart restores
    the partitions from the committed changelog; read_committed sees every input once, with
    the verdicts of an engine per key over that key's messages."""
    lines, topics, settings = _preloaded_keyed(kafka_bootstrap, unique_topic, changelogs,
                                               "eos-key", poll_batch_size=500)
    state, log = tmp_path / "state", tmp_path / "service.log"
    key = {"STREAM_DEDUP__SCALE__SCOPE": "key"}
    rng = random.Random()
    proc = start_service(settings, state, log, script=_KILLED_IN_COMMIT,
                         env={**key, "KILL_AT_COMMIT": str(rng.randint(3, 8))})
    assert proc.wait(180) == -signal.SIGKILL, log.read_text(errors="replace")[-3000:]
    k = settings.kafka
    kills = [len(lines) - group_lag(k.bootstrap_servers, k.group_id, k.input_topics)]
    for lag_point in sorted(rng.sample(range(3_000, 15_000), 4), reverse=True):
        proc = start_service(settings, state, log, env=key)
        try:
            _wait_lag_below(settings, lag_point, lambda p=proc: p.poll() is None,
                            timeout_s=180)
            time.sleep(rng.uniform(0.0, 0.1))
        finally:
            proc.kill()
            proc.wait()
        kills.append(len(lines) - group_lag(k.bootstrap_servers, k.group_id, k.input_topics))
    proc = start_service(settings, state, log, env=key)
    try:
        wait_drained(settings, timeout_s=180, alive=lambda: proc.poll() is None)
    finally:
        stop_service(proc, log)
    lost, twice = _check_exactly_once(kcat, settings, topics, lines, one_partition=False)
    wrong = _unlike_per_key(kcat, settings, topics, lines)
    print(f"\nexactly once, scope key, kill -9: {len(lines)} records, SIGKILL with {kills} "
          f"committed (the first inside a commit); lost {lost}, committed twice {twice}, "
          f"{len(wrong)} verdicts unlike an engine per key")
    assert (lost, twice) == (0, 0)
    assert not wrong, sorted(wrong)[:5]


def test_scope_key_an_aborted_transaction_restores_its_partitions(
        kafka_bootstrap, unique_topic, changelogs, kcat, tmp_path):
    """`scale.scope: key`: another producer takes the transactional id mid-run, so the open
    transaction (outputs, offsets, changelog records) is lost; the partitions' local state,
    ahead of the changelog now, is restored from it before their next record."""
    tx_id = f"eos-key-taken-{uuid.uuid4().hex[:8]}"
    lines, topics, settings = _preloaded_keyed(kafka_bootstrap, unique_topic, changelogs,
                                               "eos-key-taken", poll_batch_size=500,
                                               transactional_id=tx_id)
    log = tmp_path / "service.log"
    proc = start_service(settings, tmp_path / "state", log,
                         env={"STREAM_DEDUP__SCALE__SCOPE": "key"})
    try:
        _wait_lag_below(settings, len(lines) - 4_000, lambda: proc.poll() is None, 180)
        other = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": tx_id})
        other.init_transactions(30)
        wait_drained(settings, timeout_s=180, alive=lambda: proc.poll() is None)
    finally:
        stop_service(proc, log)
    dropped = _lines_of(log, "partition state dropped after an aborted transaction")
    lost, twice = _check_exactly_once(kcat, settings, topics, lines, one_partition=False)
    wrong = _unlike_per_key(kcat, settings, topics, lines)
    print(f"\nexactly once, scope key, transaction lost mid-run: lost {lost}, committed twice "
          f"{twice}, {len(wrong)} verdicts unlike an engine per key, {len(dropped)} partition "
          "states restored after it")
    assert (lost, twice) == (0, 0)
    assert not wrong, sorted(wrong)[:5]
    assert dropped and _lines_of(log, "producer fenced")


def test_broker_killed_and_restarted(kafka_bootstrap, unique_topic, kcat, tmp_path):
    lines, topics, settings = _preloaded(kafka_bootstrap, unique_topic, 12_000, 1, "eos-broker",
                                         poll_batch_size=200)
    log = tmp_path / "service.log"
    proc = start_service(settings, tmp_path / "state", log)
    script = ["bash", str(REPO / "deploy" / "kafka.sh")]
    try:
        _wait_lag_below(settings, int(len(lines) * 0.8), lambda: proc.poll() is None, 120)
        subprocess.run([*script, "kill9"], check=True, capture_output=True, timeout=60)
        time.sleep(2)
        assert proc.poll() is None, "the service died with the broker"
        subprocess.run([*script, "start"], check=True, capture_output=True, timeout=180)
        wait_drained(settings, timeout_s=180, alive=lambda: proc.poll() is None)
    finally:
        subprocess.run([*script, "start"], check=False, capture_output=True, timeout=180)
        stop_service(proc, log)
    lost, twice = _check_exactly_once(kcat, settings, topics, lines, one_partition=True)
    print(f"\nexactly once, broker kill -9: {len(lines)} records; lost {lost}, "
          f"committed twice {twice}")
    assert (lost, twice) == (0, 0)


def test_a_paused_member_is_fenced(kafka_bootstrap, unique_topic, kcat, tmp_path):
    """SIGSTOP past the session timeout with a transaction open; a second member takes the
    partitions and works on; SIGCONT: the first says in one line that it was fenced, and
    nothing is committed twice."""
    lines, topics, settings = _preloaded(kafka_bootstrap, unique_topic, 20_000, 6, "eos-pause",
                                         poll_batch_size=200, transaction_timeout_ms=30000)
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    first = start_service(settings, tmp_path / "first", first_log)
    second = None
    try:
        _wait_lag_below(settings, len(lines) - 3_000, lambda: first.poll() is None, 120)
        first.send_signal(signal.SIGSTOP)
        second = start_service(settings, tmp_path / "second", second_log)
        deadline = time.monotonic() + 120
        while not _lines_of(second_log, "partitions assigned"):
            assert time.monotonic() < deadline, "the second member got no partitions"
            time.sleep(0.2)
        time.sleep(settings.kafka.session_timeout_ms / 1000 + 4)
        first.send_signal(signal.SIGCONT)
        wait_drained(settings, timeout_s=240,
                     alive=lambda: first.poll() is None and second.poll() is None)
    finally:
        first.send_signal(signal.SIGCONT)
        stop_service(first, first_log)
        if second is not None:
            stop_service(second, second_log)
    fenced = _lines_of(first_log, "fenced by the group")
    lost, twice = _check_exactly_once(kcat, settings, topics, lines, one_partition=False)
    print(f"\nexactly once, paused member: {len(lines)} records; lost {lost}, committed twice "
          f"{twice}; the first said: {fenced[:1]}")
    assert (lost, twice) == (0, 0)
    assert fenced, "the paused member did not say it was fenced"


def test_a_member_paused_with_offsets_in_its_transaction(kafka_bootstrap, unique_topic, kcat,
                                                        tmp_path):
    """The first member stops after adding a batch's offsets to its transaction, before
    committing it. The second member takes the partitions and may not read their offsets until
    the broker aborted that transaction (read_committed offsets); the first, woken up, finds its
    producer fenced. Nothing is committed twice."""
    lines, topics, settings = _preloaded(kafka_bootstrap, unique_topic, 20_000, 6,
                                         "eos-pending", poll_batch_size=200,
                                         transaction_timeout_ms=5000)
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    first = start_service(settings, tmp_path / "first", first_log,
                          script=_STOPPED_BEFORE_COMMIT, env={"STOP_AT_COMMIT": "5"})
    second = None
    try:
        stat = Path(f"/proc/{first.pid}/stat")
        deadline = time.monotonic() + 120
        while stat.read_text().split(") ")[1][0] != "T":
            assert first.poll() is None and time.monotonic() < deadline, "it never stopped"
            time.sleep(0.1)
        second = start_service(settings, tmp_path / "second", second_log)
        wait_drained(settings, timeout_s=240, alive=lambda: second.poll() is None)
        first.send_signal(signal.SIGCONT)
        deadline = time.monotonic() + 60
        while not _lines_of(first_log, "producer fenced"):
            assert first.poll() is None and time.monotonic() < deadline, "no fence said"
            time.sleep(0.2)
    finally:
        first.send_signal(signal.SIGCONT)
        stop_service(first, first_log)
        if second is not None:
            stop_service(second, second_log)
    said = _lines_of(first_log, "producer fenced")
    lost, twice = _check_exactly_once(kcat, settings, topics, lines, one_partition=False)
    print(f"\nexactly once, paused with offsets pending: lost {lost}, committed twice {twice}; "
          f"the first said: {said[:1]}")
    assert (lost, twice) == (0, 0)


def test_another_producer_takes_the_transactional_id(kafka_bootstrap, unique_topic, kcat,
                                                     tmp_path):
    tx_id = f"eos-taken-{uuid.uuid4().hex[:8]}"
    lines, topics, settings = _preloaded(kafka_bootstrap, unique_topic, 12_000, 1, "eos-taken",
                                         poll_batch_size=200, transactional_id=tx_id)
    log = tmp_path / "service.log"
    proc = start_service(settings, tmp_path / "state", log)
    try:
        _wait_lag_below(settings, len(lines) - 2_000, lambda: proc.poll() is None, 120)
        other = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": tx_id})
        other.init_transactions(30)
        wait_drained(settings, timeout_s=120, alive=lambda: proc.poll() is None)
    finally:
        stop_service(proc, log)
    said = _lines_of(log, "producer fenced")
    lost, twice = _check_exactly_once(kcat, settings, topics, lines, one_partition=True)
    print(f"\nexactly once, transactional id taken: lost {lost}, committed twice {twice}; "
          f"said: {said[:1]}")
    assert (lost, twice) == (0, 0)
    # One line per fence: the two producers can fence each other a few times while the other
    # one's initialisation waits for the service's open transaction to be aborted.
    assert said and all("another producer took this transactional id" in line for line in said)


def test_a_transaction_that_times_out_is_decided_again(kafka_bootstrap, unique_topic, kcat,
                                                        tmp_path):
    """A pause longer than the transaction timeout but shorter than the session timeout: the
    broker aborts the transaction; the service says so and decides the batch again."""
    # Backlog-sized batches: a batch's transaction stays open while the next one is decided,
    # so the pause finds one open.
    lines, topics, settings = _preloaded(kafka_bootstrap, unique_topic, 20_000, 1, "eos-timeout",
                                         poll_batch_size=2000, transaction_timeout_ms=2000,
                                         session_timeout_ms=90_000)
    log = tmp_path / "service.log"
    proc = start_service(settings, tmp_path / "state", log)
    outputs = [topics["output"], topics["duplicates"]]
    try:
        _wait_lag_below(settings, len(lines) - 4_000, lambda: proc.poll() is None, 120)
        for _ in range(200):  # stopped with a transaction open that holds outputs
            proc.send_signal(signal.SIGSTOP)
            if _transaction_open(kafka_bootstrap, outputs):
                break
            proc.send_signal(signal.SIGCONT)
            time.sleep(0.05)
        else:
            pytest.fail("no transaction with outputs was seen open")
        # The broker looks for timed-out transactions every 10 s (its default
        # transaction.abort.timed.out.transaction.cleanup.interval.ms) and aborts them: wait
        # for that (within the session timeout, so the member stays in its group).
        deadline = time.monotonic() + 60
        while _transaction_open(kafka_bootstrap, outputs):
            assert time.monotonic() < deadline, "the broker did not abort the transaction"
            time.sleep(0.5)
        proc.send_signal(signal.SIGCONT)
        wait_drained(settings, timeout_s=120, alive=lambda: proc.poll() is None)
    finally:
        proc.send_signal(signal.SIGCONT)
        stop_service(proc, log)
    said = _lines_of(log, "past kafka.transaction_timeout_ms")
    lost, twice = _check_exactly_once(kcat, settings, topics, lines, one_partition=True)
    print(f"\nexactly once, transaction timeout: lost {lost}, committed twice {twice}; "
          f"said: {said[:1]}")
    assert (lost, twice) == (0, 0)
    assert said, "the timed-out transaction was not said"


def test_a_member_joins_mid_transaction(kafka_bootstrap, unique_topic, kcat, tmp_path):
    """Rebalance: the first member commits its open transaction before its partitions are
    revoked; nothing committed twice."""
    lines, topics, settings = _preloaded(kafka_bootstrap, unique_topic, 20_000, 6, "eos-join",
                                         poll_batch_size=200)
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    first = start_service(settings, tmp_path / "first", first_log)
    second = None
    try:
        _wait_lag_below(settings, len(lines) - 2_000, lambda: first.poll() is None, 120)
        second = start_service(settings, tmp_path / "second", second_log)
        wait_drained(settings, timeout_s=180,
                     alive=lambda: first.poll() is None and second.poll() is None)
    finally:
        stop_service(first, first_log)
        if second is not None:
            stop_service(second, second_log)
    assert _lines_of(first_log, "partitions revoked"), "the second member took no partitions"
    lost, twice = _check_exactly_once(kcat, settings, topics, lines, one_partition=False)
    aborted = len(_lines_of(first_log, "transaction aborted"))
    print(f"\nexactly once, member joined: lost {lost}, committed twice {twice}, "
          f"{aborted} transactions aborted")
    assert (lost, twice) == (0, 0)
