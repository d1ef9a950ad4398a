"""The sink picks a keyed output's partition as kafka-python's default partitioner would: the same
key lands where any Kafka client puts it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.partitioner.default import DefaultPartitioner

from stream_dedup.config import KafkaSettings
from stream_dedup.kafka.retry import Backoff
from stream_dedup.kafka.route import Output
from stream_dedup.kafka.sink import KafkaSink

pytestmark = pytest.mark.property


class Cluster:
    """What the default partitioner reads of the producer's metadata: one topic's partitions."""

    def __init__(self, topic: str, ids: set[int]) -> None:
        self.topic, self.ids = topic, ids

    def topics(self) -> set[str]:
        return {self.topic}

    def partitions_for_topic(self, topic: str) -> set[int]:
        return self.ids

    def available_partitions_for_topic(self, topic: str) -> set[int]:
        return self.ids


class Producer:
    """Knows one topic's partitions; remembers the partition each send was given."""

    def __init__(self) -> None:
        self.ids: set[int] = set()
        self.partitions: list[int | None] = []

    def partitions_for(self, topic: str) -> set[int]:
        return self.ids

    def send(self, topic: str, partition: int | None, **kw: object) -> None:
        self.partitions.append(partition)


class Sink(KafkaSink):
    def _connect(self) -> Producer:  # type: ignore[override]
        return Producer()


@settings(max_examples=300, deadline=None)
@given(keys=st.lists(st.one_of(st.none(), st.binary(max_size=40)), min_size=1, max_size=20),
       ids=st.sets(st.integers(0, 200), min_size=1, max_size=40),
       own=st.one_of(st.none(), st.integers(0, 5)))
def test_keyed_outputs_go_where_the_default_partitioner_puts_them(
        keys: list[bytes | None], ids: set[int], own: int | None) -> None:
    sink = Sink(KafkaSettings(), Backoff(0.0, 0.0))
    producer: Producer = sink.producer  # type: ignore[assignment]
    producer.ids = ids
    sink.send([Output("unique", "out", key, b"v", [], 0, own) for key in keys])
    partitioner, cluster = DefaultPartitioner(), Cluster("out", ids)
    expected = [own if own is not None else None if key is None
                else partitioner.partition("out", key, key, b"v", b"v", cluster) for key in keys]
    assert producer.partitions == expected
