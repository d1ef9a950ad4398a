"""Expiry never removes a message inside the window, and removes every one before it."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_dedup.config import Settings, WindowSettings
from stream_dedup.engine.batch import Engine
from stream_dedup.engine.expiry import expire
from stream_dedup.engine.stored import TABLES
from stream_dedup.records import Message
from stream_dedup.state import MemoryStore

pytestmark = pytest.mark.property
T0 = 1_700_000_000_000
SETTINGS = Settings(window=WindowSettings(seconds=86_400))  # the sweeps here are the only ones
TEXT = st.text(alphabet="好评物流快质量不错谢谢亲的了", min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(stream=st.lists(st.tuples(TEXT, st.integers(0, 600_000)), min_size=1, max_size=25),
       cutoff=st.integers(0, 700_000))
def test_expiry_removes_exactly_the_messages_before_the_cutoff(
        stream: list[tuple[str, int]], cutoff: int) -> None:
    engine = Engine(SETTINGS, MemoryStore(TABLES))
    engine.process([Message(f"m{i}", text, T0 + at) for i, (text, at) in enumerate(stream)])
    removed = expire(engine.store, SETTINGS, engine._strategy, engine._layout, T0 + cutoff)
    inside = {f"m{i}" for i, (_, at) in enumerate(stream) if at >= cutoff}
    ids = {key.decode() for key, _ in engine.store.scan("ids", b"", b"\xff")}
    assert ids == inside
    assert removed == len(stream) - len(inside)
    assert len(list(engine.store.scan("docs", b"", b"\xff" * 9))) == len(inside)
    assert len(list(engine.store.scan("ttl", b"", b"\xff" * 17))) == len(inside)
