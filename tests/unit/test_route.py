"""Polled records to messages and the verdicts to output records: one output per record in poll
order (a duplicate dropped when there is no duplicates topic), the input's own headers kept, and
the offsets to commit."""

import json

import pytest
from kafka.consumer.fetcher import ConsumerRecord

from stream_dedup.config import InputSettings, KafkaSettings
from stream_dedup.kafka.headers import as_dict
from stream_dedup.kafka.route import decode_batch, next_offsets, route, source_of
from stream_dedup.records import DeadLetter, Decision, Message, Verdict

pytestmark = pytest.mark.unit
KAFKA = KafkaSettings(input_topics=("in",), output_topic="out", duplicates_topic="dups",
                      dead_letter_topic="dead")


def record(offset: int, value: bytes | None, key: bytes | None = None, partition: int = 0,
           headers: list[tuple[str, bytes]] | None = None) -> ConsumerRecord:
    """A record as kafka-python's consumer returns it."""
    return ConsumerRecord("in", partition, -1, offset, 1_700_000_000_000 + offset, 0, key, value,
                          headers or [], None, -1, -1, -1)


def doc(ident: str, text: str) -> bytes:
    return json.dumps({"id": ident, "text": text}, ensure_ascii=False).encode()


def test_decode_batch_reads_each_record_with_its_arrival_time_and_origin() -> None:
    records = [record(5, doc("a", "好评")), record(6, b"\xff\xfe", partition=2),
               record(7, "纯文本".encode()), record(8, None)]
    got = decode_batch(records, InputSettings())
    assert got[0] == Message("a", "好评", 1_700_000_000_005, None, ("in", 0))
    assert isinstance(got[1], DeadLetter) and got[1].source == "in/2/6"
    assert got[2] == Message("in/0/7", "纯文本", 1_700_000_000_007, None, ("in", 0))
    assert isinstance(got[3], DeadLetter)
    assert source_of(records[1]) == "in/2/6"


def test_decode_batch_by_key_scopes_each_message_by_its_key() -> None:
    got = decode_batch([record(1, doc("a", "好评"), key=b"shop-1"), record(2, doc("b", "好评"))],
                       InputSettings(), by_key=True)
    assert [m.scope for m in got] == [b"shop-1", b""]  # type: ignore[union-attr]


def test_route_by_verdict_in_poll_order_with_the_inputs_own_headers() -> None:
    records = [record(1, doc("a", "好评"), headers=[("trace", b"1"), ("dedup.verdict", b"x")]),
               record(2, b"\xff"), record(3, doc("b", "好评"), key=b"k")]
    decoded = decode_batch(records, InputSettings())
    verdicts = [Verdict("a", Decision.UNIQUE, "unique"),
                Verdict("b", Decision.EXACT, "exact: same normalized text", "a", 0, 1.0)]
    out = route(records, decoded, verdicts, KAFKA)
    assert [(o.kind, o.topic, o.key, o.value) for o in out] == [
        ("unique", "out", None, records[0].value), ("dead_letter", "dead", None, b"\xff"),
        ("duplicate", "dups", b"k", records[2].value)]
    assert out[0].headers[0] == ("trace", b"1")
    assert as_dict(out[0].headers)["dedup.verdict"] == "unique"
    assert as_dict(out[1].headers)["dedup.source.offset"] == "2"
    assert as_dict(out[2].headers)["dedup.matched_id"] == "a"
    assert [o.timestamp_ms for o in out] == [r.timestamp for r in records]


def test_no_duplicates_topic_drops_the_duplicate() -> None:
    records = [record(1, doc("a", "好评"))]
    out = route(records, decode_batch(records, InputSettings()),
                [Verdict("a", Decision.NEAR, "near", "z", 2, 0.9)],
                KafkaSettings(duplicates_topic=None))
    assert out == []


def test_verdicts_must_match_the_decoded_messages() -> None:
    records = [record(1, doc("a", "好评"))]
    decoded = decode_batch(records, InputSettings())
    one = Verdict("a", Decision.UNIQUE, "unique")
    with pytest.raises(ValueError, match="more verdicts"):
        route(records, decoded, [one, one], KAFKA)


def test_next_offsets_are_each_partitions_last_offset_plus_one() -> None:
    records = [record(7, b""), record(3, b"", partition=1), record(5, b""), record(4, b"",
                                                                                partition=1)]
    assert next_offsets(records) == {("in", 0): 8, ("in", 1): 5}
    assert next_offsets([]) == {}
