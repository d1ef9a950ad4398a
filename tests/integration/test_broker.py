"""The real Kafka broker of deploy/kafka.sh, exercised with kafka-python and with kcat.

These check the test infrastructure itself (broker settings, client versions, headers and
timestamps surviving a round trip) before any stream-dedup code is put on top of it.
"""

from __future__ import annotations

import os
import subprocess
import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

pytestmark = pytest.mark.integration

N_MESSAGES = 100
N_KEYS = 10


def _consume_all(bootstrap: str, topic: str, partitions: int, expected: int, timeout_s: float = 30):
    """Every record of ``topic`` from the beginning (no group, no commits), up to ``expected``."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        client_id="stream-dedup-test-consumer",
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        records = []
        deadline = time.monotonic() + timeout_s
        while len(records) < expected and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(batch)
        end_offsets = consumer.end_offsets(tps)
    finally:
        consumer.close()
    return records, end_offsets


def test_keyed_messages_roundtrip_with_headers_and_timestamps(kafka_bootstrap, unique_topic):
    topic = unique_topic(partitions=3)
    base_ts = int(time.time() * 1000) - 3_600_000  # an hour ago: clearly not the broker's clock

    producer = KafkaProducer(
        bootstrap_servers=kafka_bootstrap,
        client_id="stream-dedup-test-producer",
        acks="all",
        linger_ms=5,
    )
    sent = []
    try:
        for i in range(N_MESSAGES):
            key = f"用户-{i % N_KEYS}".encode()
            value = f"第{i}条：今天天气不错，出去走走 #{i}".encode()
            headers = [("seq", str(i).encode()), ("source", "测试源".encode())]
            ts = base_ts + i * 1000
            future = producer.send(topic, value=value, key=key, headers=headers, timestamp_ms=ts)
            sent.append((i, key, value, headers, ts, future))
        producer.flush(timeout=30)
        expected = {}
        for i, key, value, headers, ts, future in sent:
            md = future.get(timeout=30)
            assert md.topic == topic
            expected[(md.partition, md.offset)] = (i, key, value, headers, ts)
    finally:
        producer.close(timeout=10)

    assert len(expected) == N_MESSAGES, "two sends were acknowledged at the same offset"

    records, end_offsets = _consume_all(kafka_bootstrap, topic, 3, N_MESSAGES)
    got = {(r.partition, r.offset): r for r in records}
    assert len(records) == N_MESSAGES, f"consumed {len(records)} records, expected {N_MESSAGES}"
    assert set(got) == set(expected)
    assert sum(end_offsets.values()) == N_MESSAGES

    for pos, (i, key, value, headers, ts) in expected.items():
        r = got[pos]
        assert (r.key, r.value) == (key, value), f"message {i} at {pos}"
        assert list(r.headers) == headers, f"headers of message {i}"
        assert r.timestamp == ts, f"timestamp of message {i}"
        assert r.timestamp_type == 0, "CreateTime expected (the producer's timestamp is kept)"

    # Keyed: one partition per key, keys spread over more than one partition, and within a
    # partition the records are in send order with contiguous offsets from 0 (no duplicates).
    partitions_of_key: dict[bytes, set[int]] = {}
    for (partition, _), (_, key, *_rest) in expected.items():
        partitions_of_key.setdefault(key, set()).add(partition)
    assert all(len(ps) == 1 for ps in partitions_of_key.values()), partitions_of_key
    assert len({p for ps in partitions_of_key.values() for p in ps}) > 1
    for partition in range(3):
        offsets = sorted(o for p, o in expected if p == partition)
        assert offsets == list(range(len(offsets)))
        seqs = [expected[(partition, o)][0] for o in offsets]
        assert seqs == sorted(seqs)


def _run(cmd: list[str], stdin: str | None = None, timeout: float = 60) -> str:
    proc = subprocess.run(
        cmd,
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
        check=False,
        env={**os.environ, "LC_ALL": "C.UTF-8"},
    )
    assert proc.returncode == 0, f"{cmd} exited {proc.returncode}: {proc.stderr}"
    return proc.stdout


def test_kcat_and_kafka_python_read_each_others_messages(kafka_bootstrap, unique_topic, kcat):

    # kcat (librdkafka) produces; kafka-python consumes. One partition: order is checked too.
    topic_a = unique_topic(partitions=1, prefix="kcat-to-python")
    lines = [(f"k{i}", f"来自 kcat 的第{i}条消息") for i in range(20)]
    _run(
        [kcat, "-P", "-b", kafka_bootstrap, "-t", topic_a, "-K", "\\t", "-H", "origin=kcat"],
        stdin="".join(f"{k}\t{v}\n" for k, v in lines),
    )
    records, _ = _consume_all(kafka_bootstrap, topic_a, 1, len(lines))
    assert [(r.key.decode(), r.value.decode()) for r in records] == lines
    assert all(list(r.headers) == [("origin", b"kcat")] for r in records)
    assert [r.offset for r in records] == list(range(len(lines)))

    # kafka-python produces; kcat consumes. Two partitions: compared as a multiset.
    topic_b = unique_topic(partitions=2, prefix="python-to-kcat")
    messages = [(f"键{i % 7}", f"kafka-python 写的第{i}条") for i in range(30)]
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
    try:
        futures = [producer.send(topic_b, key=k.encode(), value=v.encode()) for k, v in messages]
        producer.flush(timeout=30)
        for f in futures:
            f.get(timeout=30)
    finally:
        producer.close(timeout=10)
    consume = ["-C", "-b", kafka_bootstrap, "-t", topic_b, "-o", "beginning", "-e"]
    out = _run([kcat, *consume, "-f", "%k\t%s\n"])
    got = [tuple(line.split("\t", 1)) for line in out.splitlines()]
    assert sorted(got) == sorted(messages)
