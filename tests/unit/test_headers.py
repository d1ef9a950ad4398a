"""The `dedup.*` headers: the verdict's in a fixed order with exact bytes, a dead letter's
reason and address, and earlier `dedup.*` headers of an input dropped."""

import pytest

from stream_dedup.kafka.headers import as_dict, dead_letter_headers, kept, verdict_headers
from stream_dedup.records import Decision, Verdict

pytestmark = pytest.mark.unit


def test_headers_are_built_in_order_with_their_exact_bytes() -> None:
    near = Verdict("b", Decision.NEAR, "near: distance 2, similarity 0.91", "a", 2, 0.91236,
                   "number,date", True)
    assert verdict_headers(near) == [
        ("dedup.verdict", b"near"), ("dedup.reason", b"near: distance 2, similarity 0.91"),
        ("dedup.matched_id", b"a"), ("dedup.distance", b"2"), ("dedup.similarity", b"0.9124"),
        ("dedup.guard", b"number,date"), ("dedup.replayed", b"true")]
    unique = verdict_headers(Verdict("c", Decision.UNIQUE, "unique"))
    assert unique == [("dedup.verdict", b"unique"), ("dedup.reason", b"unique")]
    unique.append(("x", b"y"))  # each record's list is its own
    assert verdict_headers(Verdict("d", Decision.UNIQUE, "unique"))[-1] == ("dedup.reason",
                                                                             b"unique")
    own = [("trace", b"1"), ("dedup.verdict", b"old"), ("b", b"")]
    assert kept(own) == [("trace", b"1"), ("b", b"")] and len(own) == 3
    assert kept(None) == kept(()) == [] and kept([]) is not kept([])
def test_dead_letter_headers_say_why_and_where() -> None:
    assert dead_letter_headers("not JSON", "in", 3, 1234) == [
        ("dedup.error", b"not JSON"), ("dedup.source.topic", b"in"),
        ("dedup.source.partition", b"3"), ("dedup.source.offset", b"1234")]


def test_as_dict_reads_text_and_keeps_the_last_of_a_name() -> None:
    assert as_dict([("a", b"1"), ("b", "好".encode()), ("a", b"2"), ("c", b"\xff")]) == {
        "a": "2", "b": "好", "c": "\ufffd"}
