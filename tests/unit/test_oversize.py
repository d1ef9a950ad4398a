"""No record blocks a batch: an output its topic cannot take becomes a dead letter cut to fit,
with its original size, a digest of the whole value and the reason; one the broker refuses
anyway is cut smaller, and a cut dead letter refused too is skipped, logged and counted."""

from __future__ import annotations

import hashlib
import json

import pytest
from confluent_kafka import KafkaError
from test_metrics_service import NOW_MS, Errors, FakeKafkaSink
from test_runtime_service import Rec, settings

from stream_dedup.config import InputSettings
from stream_dedup.kafka import headers as h
from stream_dedup.kafka import oversize
from stream_dedup.kafka.retry import Backoff
from stream_dedup.kafka.route import Output, decode_batch, route
from stream_dedup.records import Decision, Verdict

pytestmark = pytest.mark.unit
LIMITS = {"out": 100_000, "dups": 100_000, "dead": 50_000}


def record(offset: int, value: bytes) -> Rec:
    return Rec("in", 0, offset, value, key=b"k", headers=[("trace", b"1")])


def unique(ident: str) -> Verdict:
    return Verdict(ident, Decision.UNIQUE, "unique")


def test_a_message_too_large_for_the_output_topic_is_a_cut_dead_letter() -> None:
    value = json.dumps({"id": "a", "text": "好" * 60_000}, ensure_ascii=False).encode()
    r = record(7, value)
    decoded = decode_batch([r], InputSettings(max_bytes=1 << 20, max_chars=1 << 20))
    [o] = route([r], decoded, [unique("a")], settings().kafka, LIMITS)
    got = h.as_dict(o.headers)
    assert o.kind == "dead_letter" and o.topic == "dead"
    assert oversize.record_bytes(o) <= LIMITS["dead"] and value.startswith(o.value or b"x")
    assert got[h.ORIGINAL_SIZE] == str(len(value))
    assert got[h.DIGEST] == "sha256:" + hashlib.sha256(value).hexdigest()
    assert got[h.ERROR] == (f"record of {len(value)} bytes is too large for topic out "
                            "(at most 100000 bytes a record)")
    assert (got[h.SOURCE_TOPIC], got[h.SOURCE_OFFSET], got["trace"]) == ("in", "7", "1")
    assert h.VERDICT not in got


def test_a_dead_letter_too_large_keeps_why_it_could_not_be_read() -> None:
    value = b"x" * 200_000
    r = record(3, value)
    decoded = decode_batch([r], InputSettings())  # over input.max_bytes
    [o] = route([r], decoded, [], settings().kafka, LIMITS)
    got = h.as_dict(o.headers)
    assert o.topic == "dead" and len(o.value or b"") < LIMITS["dead"]
    assert got[h.ERROR].startswith("record of 200000 bytes is over input.max_bytes=65536; "
                                   "record of 200000 bytes is too large for topic dead")
    assert got[h.ORIGINAL_SIZE] == "200000" and got[h.SOURCE_OFFSET] == "3"


def test_outputs_that_fit_are_left_as_they_are() -> None:
    small = json.dumps({"id": "a", "text": "你好世界"}, ensure_ascii=False).encode()
    r = record(0, small)
    decoded = decode_batch([r], InputSettings())
    assert (route([r], decoded, [unique("a")], settings().kafka, LIMITS)
            == route([r], decoded, [unique("a")], settings().kafka))


def sink_with_errors(error: int) -> tuple[FakeKafkaSink, Errors]:
    meter = Errors()
    sink = FakeKafkaSink(settings().kafka, Backoff(0.0, 0.0, sleep=lambda _: None), meter)
    sink.producer.error = KafkaError(error)  # type: ignore[attr-defined]
    return sink, meter


def test_a_record_the_broker_refuses_goes_out_as_a_cut_dead_letter() -> None:
    sink, meter = sink_with_errors(KafkaError.MSG_SIZE_TOO_LARGE)
    sink.producer.failing = 1  # type: ignore[attr-defined]
    big = b"y" * 100_000
    sink.deliver([Output("unique", "out", b"k", big, [("trace", b"1")], NOW_MS),
                  Output("unique", "out", b"k", b"fits", [], NOW_MS)])
    acked = sink.producer.acked  # type: ignore[attr-defined]
    assert acked[0] == b"fits" and acked[1] == big[:len(acked[1])]
    assert oversize.SHRUNK_BYTES - 1000 < len(acked[1]) < oversize.SHRUNK_BYTES
    assert meter.kinds == ["produce"]
    assert sink.limits_read == ["out"]  # the refusing topic's limit read again


def test_a_cut_dead_letter_refused_too_is_skipped_logged_and_counted(caplog) -> None:
    sink, meter = sink_with_errors(KafkaError.MSG_SIZE_TOO_LARGE)
    sink.producer.failing = 2  # type: ignore[attr-defined]
    sink.deliver([Output("unique", "out", b"k", b"z" * 100_000, [], NOW_MS)])  # returns
    assert sink.producer.acked == []  # type: ignore[attr-defined]
    assert meter.kinds == ["produce", "produce", "dead_letter"]
    assert "dead letter refused by topic dead, skipped" in caplog.text


def test_fit_all_cuts_only_the_outputs_their_topic_cannot_take() -> None:
    """The stages' outputs: a dead letter made here reads its source from the output's own
    headers."""
    where = h.dead_letter_headers("not JSON", "in", 0, 9)
    big = Output("dead_letter", "dead", None, b"x" * 80_000, where, NOW_MS)
    small = Output("original", "out", b"k", b"y" * 40_000, [], NOW_MS)
    kept, cut = oversize.fit_all([small, big], LIMITS, "dead")
    assert kept is small and cut.topic == "dead" and len(cut.value) < LIMITS["dead"]
    got = h.as_dict(cut.headers)
    assert got[h.ORIGINAL_SIZE] == "80000" and got[h.SOURCE_OFFSET] == "9"
    assert got[h.ERROR].startswith("not JSON; record of 80000 bytes is too large for topic dead")
