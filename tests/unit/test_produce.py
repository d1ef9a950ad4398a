"""`stream-dedup produce`: each line one record as it is, keyed by its JSON id field, paced to a
rate, and an error naming how many records the broker did not acknowledge."""

from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from stream_dedup.errors import ServiceError
from stream_dedup.kafka import produce
from stream_dedup.kafka.produce import Produced, key_of, send_lines

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("raw", "id_field", "key"),
    [
        (b'{"id": "a1", "text": "x"}', "id", b"a1"),
        (b'  {"id": 42}', "id", b"42"),
        (b'{"meta": {"id": "m"}}', "meta.id", b"m"),
        (b'{"id": true}', "id", None),  # not an id
        (b'{"id": {"x": 1}}', "id", None),
        (b'{"text": "x"}', "id", None),
        (b'{"meta": "m"}', "meta.id", None),
        (b'{"id": "a1"', "id", None),  # broken JSON: sent all the same, without a key
        (b"plain text", "id", None),
        (b'{"id": "a1"}', None, None),
    ],
)
def test_key_of_is_the_id_fields_value(raw: bytes, id_field: str | None,
                                       key: bytes | None) -> None:
    assert key_of(raw, id_field) == key


@dataclass
class Future:
    error: BaseException | None

    def add_errback(self, callback: Callable[[BaseException], object]) -> None:
        if self.error is not None:
            callback(self.error)


@dataclass
class FakeProducer:
    fail: set[int] = field(default_factory=set)  # the sends (from 0) the broker refuses
    sent: list[tuple[str, bytes, bytes | None]] = field(default_factory=list)
    log: list[str] = field(default_factory=list)

    def partitions_for(self, topic: str) -> set[int]:
        self.log.append("metadata")
        return {0}

    def send(self, topic: str, value: bytes, key: bytes | None) -> Future:
        self.log.append("send")
        self.sent.append((topic, value, key))
        return Future(RuntimeError("refused") if len(self.sent) - 1 in self.fail else None)

    def flush(self) -> None:
        self.log.append("flush")


def test_send_lines_sends_every_line_as_it_is_then_flushes() -> None:
    producer = FakeProducer()
    lines = [b'{"id": "a", "text": "x"}', b"not json", b""]
    done = send_lines(producer, "in", lines, "id")  # type: ignore[arg-type]
    assert producer.sent == [("in", lines[0], b"a"), ("in", b"not json", None), ("in", b"", None)]
    assert producer.log == ["metadata", "send", "send", "send", "flush"]
    assert done.records == 3


def test_unacknowledged_records_are_an_error_that_counts_them() -> None:
    producer = FakeProducer(fail={1, 2})
    with pytest.raises(ServiceError, match=r"2 of 4 records were not acknowledged.*refused"):
        send_lines(producer, "in", [b"a", b"b", b"c", b"d"], None)  # type: ignore[arg-type]


def test_rate_paces_the_sends(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    monkeypatch.setattr(produce, "time", SimpleNamespace(perf_counter=lambda: now[0], sleep=sleep))
    done = send_lines(FakeProducer(), "in", [b"x"] * 5, None, rate=10.0)  # type: ignore[arg-type]
    assert slept == pytest.approx([0.1] * 4)  # the first at once, then one every 0.1 s
    assert done == Produced(5, pytest.approx(0.4)) and done.rate == pytest.approx(12.5)
