"""The service's producer (librdkafka, `kafka/sink.py`) on the real broker: what it writes is what
the service routed, read back with kafka-python, and keyed records land where kafka-python's (and
Java's) default partitioner puts them."""

from __future__ import annotations

import dataclasses

import pytest
from kafka.partitioner.default import murmur2
from kafka_helpers import read_topic

from stream_dedup.config import KafkaSettings
from stream_dedup.errors import ServiceError
from stream_dedup.kafka import headers as h
from stream_dedup.kafka.retry import Backoff
from stream_dedup.kafka.route import Output
from stream_dedup.kafka.sink import KafkaSink

NOW_MS = 1_767_000_000_000


def sink(bootstrap: str, **kafka: object) -> KafkaSink:
    k = dataclasses.replace(KafkaSettings(bootstrap_servers=bootstrap), **kafka)
    return KafkaSink(k, Backoff(0.1, 1.0))


def test_outputs_are_written_as_routed_and_keyed_ones_partitioned_like_kafka_python(
        kafka_bootstrap: str, unique_topic) -> None:
    topic = unique_topic(partitions=6)
    outputs = [Output("unique", topic, f"key-{i}".encode() if i % 5 else None,
                      f"value {i}".encode(), [("dedup.verdict", b"unique"), ("n", str(i).encode())],
                      NOW_MS + i, partition=2 if i % 7 == 0 else None) for i in range(300)]
    out = sink(kafka_bootstrap)
    out.prepare([topic])
    sent = out.send(outputs)
    out.complete(sent)
    assert sent.pending == 0 and not sent.failed
    out.close()

    records = read_topic(kafka_bootstrap, topic)
    assert len(records) == len(outputs)
    by_value = {r.value: r for r in records}
    for o in outputs:
        r = by_value[o.value]
        assert (r.key, r.timestamp, list(r.headers)) == (o.key, o.timestamp_ms, o.headers)
        if o.partition is not None:
            assert r.partition == o.partition
        elif o.key is not None:
            assert r.partition == (murmur2(o.key) & 0x7FFFFFFF) % 6  # kafka-python's


def test_a_topic_that_does_not_exist_is_named_at_start(kafka_bootstrap: str) -> None:
    out = sink(kafka_bootstrap)
    with pytest.raises(ServiceError, match="topic no-such-topic-here does not exist"):
        out.prepare(["no-such-topic-here"])
    out.close()


def test_a_record_over_the_size_limit_is_written_as_a_cut_dead_letter(
        kafka_bootstrap: str, unique_topic) -> None:
    topic, dead = unique_topic(partitions=1), unique_topic(partitions=1)
    out = sink(kafka_bootstrap, dead_letter_topic=dead)
    out.prepare([topic, dead])
    value = b"x" * 2_000_000  # over the producer's message.max.bytes: refused before sending
    out.deliver([Output("unique", topic, b"k", value, [("trace", b"1")], NOW_MS)])
    out.close()
    assert read_topic(kafka_bootstrap, topic) == []
    [letter] = read_topic(kafka_bootstrap, dead)
    got = h.as_dict(letter.headers)
    assert letter.key == b"k" and value.startswith(letter.value) and len(letter.value) > 10_000
    assert got[h.ORIGINAL_SIZE] == "2000000" and got[h.DIGEST].startswith("sha256:")
    assert got[h.ERROR].startswith(f"refused by topic {topic}: ") and got["trace"] == "1"
