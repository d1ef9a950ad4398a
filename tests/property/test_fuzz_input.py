"""Hostile input: whatever bytes arrive, the outcome is a verdict or a dead letter with a reason.

Hypothesis drives decoding, normalization and the engine with arbitrary bytes, deep and huge JSON,
invalid surrogates, control characters and long runs of emoji and combining marks. A deadline per
example guards against hangs (it is a bound, not a speed target).
"""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stream_dedup.config import InputSettings, Settings
from stream_dedup.decode import decode
from stream_dedup.engine.batch import Engine
from stream_dedup.engine.stored import TABLES
from stream_dedup.records import DeadLetter, Message, Verdict
from stream_dedup.state import MemoryStore

pytestmark = pytest.mark.property
LIMITS = InputSettings(max_bytes=4096, max_chars=2000, max_json_depth=16)
ENGINE = Engine(Settings(input=LIMITS), MemoryStore(TABLES))

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=50),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=30,
)
hostile_text = st.one_of(
    st.text(max_size=300),
    st.text(alphabet=st.sampled_from(["😂", "\u0301", "\u200b", "\ufeff", "\x00", "\x1b", "啊",
                                      "[", "#", "@", "/", "<", "&", ";"]), max_size=3000),
)
raw_records = st.one_of(
    st.binary(max_size=600),
    hostile_text.map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.builds(lambda v: json.dumps({"text": v, "id": "x"}).encode(), json_values),
    st.integers(1, 200).map(lambda n: ("[" * n + "]" * n).encode()),
    st.integers(1, 200).map(lambda n: ('{"a":' * n + '"x"' + "}" * n).encode()),
    st.integers(1, 200).map(lambda n: ('{"text": "t", "d": ' + "[" * n + "]" * n + "}").encode()),
)


@settings(max_examples=600, deadline=2000,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(raw_records)
def test_any_record_becomes_a_verdict_or_a_dead_letter(raw: bytes) -> None:
    record = decode(raw, "fuzz:1", "line:1", 1_700_000_000_000, LIMITS)
    if isinstance(record, DeadLetter):
        assert record.reason and record.raw == raw
        return
    assert isinstance(record, Message) and len(record.text) <= LIMITS.max_chars
    (verdict,) = ENGINE.process([record])
    assert isinstance(verdict, Verdict) and verdict.reason


def test_limits_have_their_own_reasons() -> None:
    too_big = decode(b"x" * 5000, "s", "f", 0, LIMITS)
    too_long = decode(("a" * 2500).encode(), "s", "f", 0, LIMITS)
    too_deep = decode(('{"text": "t", "d": ' + "[" * 40 + "]" * 40 + "}").encode(), "s", "f", 0,
                      LIMITS)
    assert "max_bytes" in too_big.reason
    assert "max_chars" in too_long.reason
    assert "max_json_depth" in too_deep.reason
