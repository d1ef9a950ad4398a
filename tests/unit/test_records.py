"""The records that flow through the engine: a decision says whether it is a duplicate, and a
verdict, a message and a dead letter are immutable values."""

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


@pytest.mark.parametrize("record", [Message("a", "好评", 1), Verdict("a", Decision.UNIQUE, "u"),
                                    DeadLetter("in:1", "not JSON", b"x")])
def test_records_are_immutable_values(record: object) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(record, dataclasses.fields(record)[0].name, "b")  # type: ignore[arg-type]
    assert record == dataclasses.replace(record)  # type: ignore[type-var]


def test_a_verdicts_optional_fields_default_to_none() -> None:
    v = Verdict("a", Decision.UNIQUE, "unique")
    assert (v.matched_id, v.distance, v.similarity, v.guard, v.replayed) == (None, None, None,
                                                                             None, False)
    m = Message("a", "好评", 1)
    assert (m.scope, m.origin) == (None, None)
