"""The wire format between the stages of the global scope: probes, answers and originals read back
as written, records cut under the size limit, and lookup-only anchors sent where the posted ones
are."""

import pytest

from stream_dedup.scale.probes import (
    ANCHOR,
    BLOCK,
    EXACT,
    LOOKUP,
    Answer,
    Hit,
    Original,
    Probe,
    pack_answers,
    pack_original,
    pack_probes,
    partition_of,
    unpack_answers,
    unpack_original,
    unpack_probes,
)

pytestmark = pytest.mark.unit


def _original(message_id: str, probes: int, text: str = "文本", **kw) -> Original:
    fields = {"message_id": message_id, "ts_ms": 5, "text": text, "fp": 7, "probes": probes,
              "anchors": (0, 0, 0), "topic": "in", "partition": 1, "offset": 9, "timestamp": 5,
              "key": None, "value": b"{}", "headers": ()}
    return Original(**{**fields, **kw})


def test_wire_round_trip() -> None:
    probes = [Probe(BLOCK, 3, 2**64 - 1, 12, "m1", 0, 99, "某个文本"),
              Probe(LOOKUP, 0, 5, -1, "身份", 7)]
    assert [p for r in pack_probes(probes) for p in unpack_probes(r)] == probes
    answers = [Answer("m2", 4, ANCHOR, (Hit("m1", 12, 99, -1, "某个文本"),)),
               Answer("m3", 0, EXACT, (Hit("m0", 5, 0, -1, "?"),)),
               Answer("m4", 2, BLOCK, (Hit("m", 1, 2, 3, ""),), True)]
    assert [a for r in pack_answers(answers) for a in unpack_answers(r)] == answers
    for o in (_original("m1", 3, headers=(("h", b"\x00v"), ("k", b""))),
              _original("m2", 0, text="", key=b"", value=None),
              _original("m3", 1, text="好评谢谢亲", clauses=(2, 4)),
              _original("m5", 1, text="一日呀", ending="?", key=b"k"),
              _original("m6", 1, text="一日", ending=".", key=b"k")):
        assert unpack_original(pack_original(o)) == o
    # a record packed before clause ends were carried reads as a text without them
    packed = pack_original(_original("m4", 1, clauses=(1,)))
    assert unpack_original(packed[:-4]) == _original("m4", 1)


def test_records_are_cut_under_the_size_limit() -> None:
    probes = [Probe(ANCHOR, 0, n, 1, f"m{n}", 0, 1, "字" * 3000) for n in range(200)]
    records = pack_probes(probes)
    assert len(records) > 1 and all(len(r) <= 256 * 1024 for r in records)
    assert [p for r in records for p in unpack_probes(r)] == probes


def test_lookup_anchors_meet_posted_ones() -> None:
    posted, looked = Probe(ANCHOR, 0, 42, 1, "a", 0), Probe(LOOKUP, 0, 42, 2, "b", 0)
    assert posted.shard_key == looked.shard_key
    assert partition_of(posted.shard_key, 12) == partition_of(looked.shard_key, 12)
