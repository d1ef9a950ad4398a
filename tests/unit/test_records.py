"""The records that flow through the engine: a decision says whether it is a duplicate, a message
and a dead letter are immutable values, and a verdict is a value (made for every message, so a
plain record: a frozen one costs four times as much to make)."""

import dataclasses

import pytest

from stream_dedup.records import DeadLetter, Decision, Message, Verdict

pytestmark = pytest.mark.unit


def test_only_exact_and_near_are_duplicates() -> None:
    assert {d: d.is_duplicate for d in Decision} == {Decision.UNIQUE: False,
                                                     Decision.EXACT: True, Decision.NEAR: True}
    assert Verdict("a", Decision.NEAR, "near").is_duplicate
    assert not Verdict("a", Decision.UNIQUE, "unique").is_duplicate


def test_decisions_are_their_header_text() -> None:
    assert [str(d) for d in Decision] == ["unique", "exact", "near"]
    assert Decision("near") is Decision.NEAR


@pytest.mark.parametrize("record", [Message("a", "好评", 1), DeadLetter("in:1", "not JSON", b"x")])
def test_records_are_immutable_values(record: object) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(record, dataclasses.fields(record)[0].name, "b")  # type: ignore[arg-type]
    assert record == dataclasses.replace(record)  # type: ignore[type-var]


def test_verdicts_with_the_same_fields_are_equal() -> None:
    v = Verdict("a", Decision.NEAR, "near: distance 3", "b", 3, 0.9)
    assert v == dataclasses.replace(v)
    assert v != dataclasses.replace(v, matched_id="c")


def test_a_verdicts_optional_fields_default_to_none() -> None:
    v = Verdict("a", Decision.UNIQUE, "unique")
    assert (v.matched_id, v.distance, v.similarity, v.guard, v.replayed) == (None, None, None,
                                                                             None, False)
    m = Message("a", "好评", 1)
    assert (m.scope, m.origin) == (None, None)
