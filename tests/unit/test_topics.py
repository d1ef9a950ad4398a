"""Admin edges with fake clients: the configured topics, topic creation that tolerates existing
topics, record counts and a group's lag (all of a partition before the group's first commit)."""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
from kafka import TopicPartition
from kafka.errors import NodeNotReadyError, TopicAlreadyExistsError
from kafka.structs import OffsetAndMetadata

from stream_dedup.config import KafkaSettings
from stream_dedup.kafka import topics
from stream_dedup.kafka.topics import (
    LagWatch,
    cluster,
    configured_topics,
    create_topics,
    record_counts,
)

pytestmark = pytest.mark.unit
A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


@dataclass
class FakeReader:
    partitions: dict[str, set[int]]
    begins: dict[TopicPartition, int]
    ends: dict[TopicPartition, int]

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return self.partitions.get(topic)

    def beginning_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: self.begins[tp] for tp in tps}

    def end_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: self.ends[tp] for tp in tps}


@dataclass
class FakeAdmin:
    existing: set[str] = field(default_factory=set)
    created: dict[str, dict] = field(default_factory=dict)
    committed: dict[TopicPartition, OffsetAndMetadata] = field(default_factory=dict)
    not_ready: int = 0  # answers NodeNotReady this many times first

    def create_topics(self, spec: dict[str, dict], **_: object) -> None:
        (name, how), = spec.items()
        if name in self.existing:
            raise TopicAlreadyExistsError(name)
        self.created[name] = how

    def list_group_offsets(self, groups: dict[str, list[TopicPartition]]
                           ) -> dict[str, dict[TopicPartition, OffsetAndMetadata]]:
        if self.not_ready:
            self.not_ready -= 1
            raise NodeNotReadyError("loading")
        return {group: self.committed for group in groups}


READER = FakeReader({"a": {1, 0}, "b": {0}}, {A0: 10, A1: 0, B0: 5}, {A0: 25, A1: 4, B0: 5})


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> FakeAdmin:
    client = FakeAdmin()

    @contextmanager
    def reader(where: object) -> Iterator[FakeReader]:
        yield READER

    @contextmanager
    def admin(where: object) -> Iterator[FakeAdmin]:
        yield client

    monkeypatch.setattr(topics, "_reader", reader)
    monkeypatch.setattr(topics, "admin", admin)
    monkeypatch.setattr(topics, "time", SimpleNamespace(sleep=lambda s: None))
    return client


def test_configured_topics_inputs_first_duplicates_only_when_kept() -> None:
    k = KafkaSettings(input_topics=("i1", "i2"), output_topic="o", dead_letter_topic="d",
                      duplicates_topic="dup")
    assert configured_topics(k) == ["i1", "i2", "o", "d", "dup"]
    assert configured_topics(KafkaSettings(input_topics=("i",), output_topic="o",
                                           dead_letter_topic="d", duplicates_topic=None)) == [
        "i", "o", "d"]


def test_cluster_of_an_address_is_plaintext_to_each_bootstrap_server() -> None:
    k, conn = cluster("h1:9092,h2:9093")
    assert k.bootstrap_servers == "h1:9092,h2:9093"
    assert conn == {"bootstrap_servers": ["h1:9092", "h2:9093"], "security_protocol": "PLAINTEXT"}


def test_create_topics_creates_each_once_and_names_the_existing(fakes: FakeAdmin) -> None:
    fakes.existing = {"o"}
    k = KafkaSettings(input_topics=("i",), output_topic="o", dead_letter_topic="d",
                      duplicates_topic=None, partitions=3)
    assert create_topics(k, more={"probes": 12}) == {"i": "created", "o": "exists",
                                                     "d": "created", "probes": "created"}
    assert {n: s["num_partitions"] for n, s in fakes.created.items()} == {"i": 3, "d": 3,
                                                                          "probes": 12}


def test_record_counts_sum_each_topics_partitions(fakes: FakeAdmin) -> None:
    assert record_counts("h:9092", ["a", "b", "none"]) == {"a": 19, "b": 0, "none": 0}


def test_lag_counts_from_the_commit_or_from_the_beginning(fakes: FakeAdmin) -> None:
    fakes.committed = {A0: OffsetAndMetadata(20, "", -1), A1: OffsetAndMetadata(-1, "", -1)}
    fakes.not_ready = 2  # a coordinator still loading the group: asked again
    with LagWatch("h:9092", "g", ["a", "b"]) as watch:
        assert watch.lag() == (25 - 20) + (4 - 0) + (5 - 5)
