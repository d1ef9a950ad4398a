"""The stored record of a message: its encoding and its keys."""

import struct

import pytest

from stream_dedup.engine.stored import Doc, encode_doc, seq_key, ttl_key
from stream_dedup.records import Decision, Verdict

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("verdict", [
    Verdict("m2", Decision.NEAR, "near: distance 3, similarity 0.81", matched_id="m1",
            distance=3, similarity=0.8123, guard=None),
    Verdict("m3", Decision.UNIQUE, "related: number", matched_id="m1", distance=5,
            similarity=0.7, guard="number"),
    Verdict("消息4", Decision.UNIQUE, "unique"),
])
def test_encode_doc_is_doc_encode_and_decodes_back(verdict: Verdict) -> None:
    doc = Doc(7, 1_700_000_000_000, 2**64 - 1, 12345, verdict, "归一化的文本", True)
    data = encode_doc(doc.ts_ms, doc.fp, doc.text_hash, verdict, doc.text, doc.indexed)
    assert data == doc.encode()
    back = Doc.decode(7, data)
    assert back.verdict.similarity == (None if verdict.similarity is None
                                       else round(verdict.similarity, 4))
    assert back == Doc(7, doc.ts_ms, doc.fp, doc.text_hash,
                       Verdict(verdict.id, verdict.decision, verdict.reason, verdict.matched_id,
                               verdict.distance, back.verdict.similarity, verdict.guard),
                       doc.text, True)
    assert Doc.peek(data) == (verdict.id, doc.fp, doc.text)


def test_keys_sort_by_seq_and_by_event_time() -> None:
    assert seq_key(5) == struct.pack(">Q", 5) and seq_key(5) < seq_key(256)
    assert ttl_key(1000, 9) == struct.pack(">QQ", 1000, 9)
    assert ttl_key(-5, 9) == ttl_key(0, 9)  # before the epoch: first in line
    assert ttl_key(999, 10) < ttl_key(1000, 1)
