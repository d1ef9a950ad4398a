"""Admin edges: create the configured topics, and count records and lag (for `demo`, tests and
the benchmark). Every client here is closed after use; a `LagWatch` keeps its two for the
questions asked of it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from typing import TypeVar

from kafka import KafkaConsumer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
from kafka.errors import KafkaError, TopicAlreadyExistsError

from ..config import KafkaSettings
from .security import client_security, connect

TIMEOUT_MS = 30_000
T = TypeVar("T")


def configured_topics(k: KafkaSettings) -> list[str]:
    """Every topic the service reads or writes, inputs first."""
    out = [*k.input_topics, k.output_topic, k.dead_letter_topic]
    if k.duplicates_topic:
        out.append(k.duplicates_topic)
    return out


Cluster = str | KafkaSettings  # a bootstrap address (PLAINTEXT), or settings with security


def cluster(where: Cluster) -> tuple[KafkaSettings, dict]:
    """Settings and the kafka-python connection kwargs (bootstrap and security) for `where`."""
    k = where if isinstance(where, KafkaSettings) else KafkaSettings(bootstrap_servers=where)
    return k, {"bootstrap_servers": k.bootstrap_servers.split(","), **client_security(k)}


@contextmanager
def admin(where: Cluster) -> Iterator[KafkaAdminClient]:
    k, conn = cluster(where)
    client = connect("connecting the admin client", k, lambda: KafkaAdminClient(
        client_id="stream-dedup-admin", request_timeout_ms=TIMEOUT_MS,
        bootstrap_timeout_ms=TIMEOUT_MS, **conn))
    try:
        yield client
    finally:
        client.close()


def create_topics(k: KafkaSettings, partitions: int | None = None,
                  more: Mapping[str, int] | None = None) -> dict[str, str]:
    """Create the configured topics (`kafka.partitions` each unless given), and the topics of
    `more` with their own partition counts (the global scope's); returns each name with
    "created" or "exists". Waits until every new partition has a leader."""
    result: dict[str, str] = {}
    counts = {name: partitions or k.partitions for name in configured_topics(k)}
    counts.update(more or {})
    with admin(k) as client:
        for name, count in counts.items():
            spec = {"num_partitions": count, "replication_factor": k.replication_factor}
            try:
                client.create_topics({name: spec}, timeout_ms=TIMEOUT_MS, wait_for_metadata=True)
                result[name] = "created"
            except TopicAlreadyExistsError:
                result[name] = "exists"
    return result


def max_message_bytes(where: Cluster, topics: Iterable[str]) -> dict[str, int]:
    """Each topic's `max.message.bytes` (its own, or the broker's default), read once at start:
    the most a record batch of it may take."""
    wanted = [ConfigResource(ConfigResourceType.TOPIC, t, configs=["max.message.bytes"])
              for t in topics]
    with admin(where) as client:
        found = client.describe_configs(wanted, config_filter="all").get("topic", {})
    return {t: int(c["max.message.bytes"]["value"]) for t, c in found.items()
            if "max.message.bytes" in c}


@contextmanager
def _reader(where: Cluster) -> Iterator[KafkaConsumer]:
    k, conn = cluster(where)
    consumer = connect("connecting a reader", k, lambda: KafkaConsumer(
        group_id=None, client_id="stream-dedup-counter", enable_auto_commit=False,
        request_timeout_ms=TIMEOUT_MS, bootstrap_timeout_ms=TIMEOUT_MS, **conn))
    try:
        yield consumer
    finally:
        consumer.close()


def partitions_of(consumer: KafkaConsumer, topics: Iterable[str]) -> list[TopicPartition]:
    out = []
    for t in topics:
        out.extend(TopicPartition(t, p) for p in sorted(consumer.partitions_for_topic(t) or ()))
    return out


def record_counts(bootstrap: Cluster, topics: Iterable[str]) -> dict[str, int]:
    """Records in each topic (end minus beginning offsets, summed over partitions)."""
    topics = list(topics)
    with _reader(bootstrap) as consumer:
        tps = partitions_of(consumer, topics)
        ends = consumer.end_offsets(tps)
        begins = consumer.beginning_offsets(tps)
    counts = dict.fromkeys(topics, 0)
    for tp in tps:
        counts[tp.topic] += ends[tp] - begins[tp]
    return counts


def _retrying(step: Callable[[], T], attempts: int = 20, wait_s: float = 0.5) -> T:
    """A coordinator that is still loading a fresh group answers NotCoordinator for a moment."""
    for _ in range(attempts - 1):
        try:
            return step()
        except KafkaError as exc:
            if not exc.retriable:
                raise
            time.sleep(wait_s)
    return step()


class LagWatch:
    """The lag of a group over `topics`, asked as often as needed on one reader and one admin
    client (made for each question, they took ~0.2 s of it)."""

    def __init__(self, where: Cluster, group: str, topics: Iterable[str]) -> None:
        self.group = group
        self._clients = ExitStack()
        try:
            self._reader = self._clients.enter_context(_reader(where))
            self._admin = self._clients.enter_context(admin(where))
            self._tps = partitions_of(self._reader, topics)
        except BaseException:
            self._clients.close()
            raise

    def lag(self) -> int:
        """Records of the topics the group has not committed yet (all of them before its first
        commit)."""
        ends = self._reader.end_offsets(self._tps)
        begins = self._reader.beginning_offsets(self._tps)
        committed = _retrying(
            lambda: self._admin.list_group_offsets({self.group: self._tps}).get(self.group, {}))
        lag = 0
        for tp in self._tps:
            done = committed.get(tp)
            offset = done.offset if done is not None and done.offset >= 0 else begins[tp]
            lag += ends[tp] - offset
        return lag

    def close(self) -> None:
        self._clients.close()

    def __enter__(self) -> LagWatch:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def group_lag(bootstrap: Cluster, group: str, topics: Iterable[str]) -> int:
    """Records of `topics` the group has not committed yet, asked once."""
    with LagWatch(bootstrap, group, topics) as watch:
        return watch.lag()
