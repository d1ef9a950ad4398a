"""`kafka.guarantee: exactly_once` without a broker: the service's order (the transaction before
commits, then the next batch's outputs open the next), an aborted transaction polled again with
first verdicts, a member out of the group aborting instead of committing, the group metadata in
librdkafka's form, the transactional id and the config keys. The real broker is in
tests/integration/test_exactly_once.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException
from kafka.structs import ConsumerGroupMetadata

from stream_dedup.config import KafkaSettings, Settings
from stream_dedup.config_file import settings_from_dict
from stream_dedup.engine.batch import Engine
from stream_dedup.engine.stored import TABLES
from stream_dedup.errors import ConfigError
from stream_dedup.kafka.headers import as_dict
from stream_dedup.kafka.retry import Backoff, Shutdown, TransactionAborted
from stream_dedup.kafka.route import Output
from stream_dedup.kafka.transaction import TransactionalSink, group_metadata, transactional_id
from stream_dedup.runtime.service import Service
from stream_dedup.state import MemoryStore

pytestmark = pytest.mark.unit
TEXT = "今天的天气真的非常好我们去公园散步吧"
MEMBER = ConsumerGroupMetadata("g", 3, "member-1", None)


@dataclass(frozen=True)
class Rec:
    topic: str
    partition: int
    offset: int
    value: bytes
    key: bytes | None = None
    headers: Sequence[tuple[str, bytes]] = ()
    timestamp: int = 1_700_000_000_000


def rec(partition: int, offset: int, ident: str, text: str) -> Rec:
    return Rec("in", partition, offset, f'{{"id": "{ident}", "text": "{text}"}}'.encode())


@dataclass
class Source:
    batches: list[list[Rec]]
    log: list[str] = field(default_factory=list)
    member: ConsumerGroupMetadata | None = MEMBER
    rewound: dict[tuple[str, int], int] = field(default_factory=dict)

    def poll(self, wait: bool = True) -> list[Rec]:
        return self.batches.pop(0) if self.batches else []

    def commit(self, offsets: dict[tuple[str, int], int]) -> bool:
        raise AssertionError("offsets go into the transaction, never to the consumer")

    def transaction_group(self, offsets: dict[tuple[str, int], int]
                          ) -> ConsumerGroupMetadata | None:
        return self.member

    def rewind(self, offsets: dict[tuple[str, int], int]) -> None:
        self.log.append("rewind")
        self.rewound.update(offsets)

    def lags(self) -> dict[tuple[str, int], int]:
        return {}

    def topics(self) -> set[str]:
        return {"in", "out", "dups", "dead"}

    def before_revoke(self, settle) -> None:
        self.settle = settle

    def close(self) -> None:
        self.log.append("close source")


@dataclass
class Sink:
    """A transactional sink: `send` opens a transaction; `commit` closes it with the offsets,
    or aborts it when `refuse` is set."""

    log: list[str]
    refuse: bool = False
    outputs: list[Output] = field(default_factory=list)
    committed: dict[tuple[str, int], int] = field(default_factory=dict)
    open: list[Output] | None = None

    def send(self, outputs: Sequence[Output]) -> list[Output]:
        if self.open is None:
            self.log.append("begin")
            self.open = []
        self.open.extend(outputs)
        self.log.append("send")
        return list(outputs)

    def commit(self, sent, offsets: dict[tuple[str, int], int],
               group: ConsumerGroupMetadata) -> None:
        assert group == MEMBER
        if self.refuse:
            self.refuse = False
            self.abort("refused")
        self.log.append("commit")
        self.outputs.extend(self.open or [])
        self.committed.update(offsets)
        self.open = None

    def abort(self, why: str) -> None:
        self.log.append("abort")
        self.open = None
        raise TransactionAborted(why)

    def close(self) -> None:
        self.log.append("close sink")


def exactly_once(batches: list[list[Rec]]) -> tuple[Service, Source, Sink]:
    k = KafkaSettings(input_topics=("in",), output_topic="out", duplicates_topic="dups",
                      dead_letter_topic="dead", guarantee="exactly_once")
    s = Settings(kafka=k)
    source = Source(batches)
    sink = Sink(source.log)
    return Service(s, Engine(s, MemoryStore(TABLES)), source, sink, Shutdown(1.0)), source, sink


@pytest.fixture
def backlog(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every batch counts as a backlog's (its transaction commits with the next batch)."""
    monkeypatch.setattr("stream_dedup.runtime.service.BACKLOG_RECORDS", 1)


def test_a_live_batch_commits_as_soon_as_it_is_sent() -> None:
    svc, source, sink = exactly_once([[rec(0, 0, "a", TEXT)]])
    assert svc.step() == 1 and source.log == ["begin", "send", "commit"]
    assert sink.committed == {("in", 0): 1} and svc.stats.records == 1


@pytest.mark.usefixtures("backlog")
def test_a_backlog_batch_commits_before_the_next_one_opens_its_transaction() -> None:
    svc, source, sink = exactly_once([[rec(0, 0, "a", TEXT)], [rec(0, 1, "b", TEXT)]])
    assert svc.step() == 1 and source.log == ["begin", "send"]
    assert svc.step() == 1
    assert source.log == ["begin", "send", "commit", "begin", "send"]
    assert sink.committed == {("in", 0): 1} and svc.stats.records == 1
    svc.complete()
    assert sink.committed == {("in", 0): 2} and svc.stats.records == 2
    assert [o.kind for o in sink.outputs] == ["unique", "duplicate"]


@pytest.mark.usefixtures("backlog")
def test_an_aborted_transaction_is_polled_again_and_gets_its_first_verdicts() -> None:
    first = [rec(0, 5, "a", TEXT), rec(1, 9, "b", "完全不同的另一条消息内容在这里出现")]
    svc, source, sink = exactly_once([first, [rec(2, 4, "c", TEXT)]])
    sink.refuse = True
    svc.step()
    svc.step()  # the first batch's transaction is aborted: the second is not sent
    assert source.log == ["begin", "send", "abort", "rewind"]
    assert source.rewound == {("in", 0): 5, ("in", 1): 9, ("in", 2): 4}
    assert sink.outputs == [] and svc.stats.records == 0 and svc.stats.refused_commits == 1
    source.batches = [first]  # polled again from the rewound offsets
    svc.step()
    svc.complete()
    assert [as_dict(o.headers)["dedup.verdict"] for o in sink.outputs] == ["unique", "unique"]
    assert all(as_dict(o.headers)["dedup.replayed"] == "true" for o in sink.outputs)
    assert sink.committed == {("in", 0): 6, ("in", 1): 10}


def test_a_member_out_of_the_group_aborts_instead_of_committing() -> None:
    svc, source, sink = exactly_once([[rec(0, 0, "a", TEXT)]])
    source.member = None  # evicted while the transaction was open
    svc.step()
    assert source.log == ["begin", "send", "abort", "rewind"] and sink.committed == {}


def test_group_metadata_is_in_librdkafkas_form() -> None:
    consumer = Consumer({"group.id": "g-1", "bootstrap.servers": "127.0.0.1:1", "log_level": 0})
    try:
        unjoined = consumer.consumer_group_metadata()
    finally:
        consumer.close()
    assert group_metadata(ConsumerGroupMetadata("g-1", -1, "", None)) == unjoined
    joined = group_metadata(ConsumerGroupMetadata("g", 7, "m", "pod-0"))
    assert joined == b"CGMDv2:" + (7).to_bytes(4, "little") + b"g\x00m\x00\x00pod-0\x00"


def test_the_transactional_id_is_one_per_state_directory() -> None:
    k = KafkaSettings(group_id="grp")
    a, b = transactional_id(k, "/data/a"), transactional_id(k, "/data/b")
    assert a.startswith("grp-") and a != b and a == transactional_id(k, "/data/a")
    assert transactional_id(KafkaSettings(transactional_id="mine"), "/data/a") == "mine"


@pytest.mark.parametrize(("config", "key", "allowed"), [
    ({"kafka": {"guarantee": "exactly-once"}}, "kafka.guarantee", "exactly_once"),
    ({"kafka": {"guarantee": "exactly_once"}, "scale": {"scope": "global"}}, "kafka.guarantee",
     "at_least_once with scale.scope global"),
    ({"kafka": {"transaction_timeout_ms": 500}}, "kafka.transaction_timeout_ms", "1000.."),
    ({"kafka": {"transactional_id": ""}}, "kafka.transactional_id", "null"),
])
def test_bad_guarantee_config_names_the_key(config: dict, key: str, allowed: str) -> None:
    with pytest.raises(ConfigError) as err:
        settings_from_dict(config, environ={})
    assert err.value.key == key and allowed in (err.value.allowed or "")


FENCED = KafkaError(KafkaError._FENCED, "fenced by a newer producer instance", fatal=True)


class FencedProducer:
    """librdkafka's transactional producer once another producer took its id: every record
    sent is lost (never answered) and the next flush or poll raises the fatal error."""

    def __init__(self, fenced: bool) -> None:
        self.fenced = fenced
        self.calls: list[str] = []

    def produce(self, *args, **kwargs) -> None:
        self.calls.append("produce")

    def _answer(self) -> int:
        if self.fenced:
            raise KafkaException(FENCED)
        return 0

    def flush(self, timeout: float = 0.0) -> int:
        return self._answer()

    def poll(self, timeout: float = 0.0) -> int:
        return self._answer()

    def begin_transaction(self) -> None:
        self.calls.append("begin")

    def abort_transaction(self, timeout: float) -> None:
        self._answer()


def fenced_sink(monkeypatch: pytest.MonkeyPatch) -> tuple[TransactionalSink, list[FencedProducer]]:
    """A transactional sink whose first producer is fenced; the producers it takes after it
    are not."""
    made: list[FencedProducer] = []

    def connect(self: TransactionalSink) -> FencedProducer:
        made.append(FencedProducer(fenced=not made))
        return made[-1]

    monkeypatch.setattr(TransactionalSink, "_connect", connect)
    k = KafkaSettings(input_topics=("in",), output_topic="out", duplicates_topic="dups",
                      dead_letter_topic="dead", guarantee="exactly_once")
    return TransactionalSink(k, Backoff(0.01, 0.1), "tx"), made


def test_a_changelog_flush_that_raises_the_fence_aborts_and_drops_the_lost_records(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A fenced producer's flush raises its fatal error instead of answering the records: the
    transaction is aborted (the service restores the partitions), a new producer takes over,
    and the records the fenced one never answered are not waited for again."""
    sink, made = fenced_sink(monkeypatch)
    changelog = sink.changelog_producer()
    lost = changelog.send("changelog", b"k", b"v", 0)
    with pytest.raises(TransactionAborted, match="another producer took"):
        changelog.flush(1.0)
    assert len(made) == 2 and sink.producer is made[1]
    changelog.send("changelog", b"k", b"v2", 0)
    changelog.flush(1.0)
    assert not lost.is_done and lost not in changelog._pending  # never answered: not held


def test_a_poll_that_raises_the_fence_aborts_the_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sending outputs polls for earlier reports; a fenced producer raises there. The commit
    then aborts the transaction (TransactionAborted) with a new producer, never crashing the
    service with librdkafka's exception."""
    sink, made = fenced_sink(monkeypatch)
    sent = sink.send([])
    with pytest.raises(TransactionAborted):
        sink.commit(sent, {("in", 0): 1}, MEMBER)
    assert sink.producer is made[1]
    sink.send([])  # the new producer begins the next transaction
    assert made[1].calls == ["begin"]


def test_a_fenced_producer_closes_without_raising(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stop after the fence: the producer's flush raises, and what it holds is lost with its
    transaction anyway; the service still stops cleanly."""
    sink, made = fenced_sink(monkeypatch)
    sink.close()
    assert len(made) == 1
