"""The global scope decides as the engine: on any stream, the three stages fed in arrival order
give every message the engine's verdict (the one verdict module, `engine/verdict.py`, behind both).

Streams are drawn from a few shared clauses and short chat lines, with the edits the verdict
rules tell apart: characters replaced, particles and comments added, numbers changed, clauses
cut, a question or a statement made of the same words, so exact, near, related and unique
verdicts all occur. With one decide partition the
stream's boilerplate is learnt from the same messages in the same order as the engine learns it;
with several, each partition learns from its own, so the boilerplate rule is left out there.
"""

import dataclasses

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from stream_dedup.config import IndexSettings, Settings, VerifySettings
from stream_dedup.engine.batch import Engine
from stream_dedup.engine.stored import TABLES
from stream_dedup.records import Message
from stream_dedup.state import MemoryStore

pytestmark = pytest.mark.property

CLAUSES = ["酒店位置很好离地铁站很近", "房间干净整洁早餐丰富", "前台服务态度非常热情",
           "价格合理性价比很高", "下次出差还会再来住", "好的亲", "什么时候发货啊", "3天左右到",
           "明天到了吧"]
EDITS = ["", "呢", "哈哈", "转发", "不", "5", "很", "您好"]
ENDINGS = ["", "？", "。", "!"]
SMALL = dataclasses.replace(Settings(), index=IndexSettings(max_candidates=4))


@st.composite
def texts(draw: st.DrawFn) -> str:
    words = draw(st.lists(st.sampled_from(CLAUSES), min_size=1, max_size=3, unique=True))
    text = "，".join(words)
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 1))
        text = text[:at] + draw(st.sampled_from(EDITS)) + text[at + cut:]
    return text + draw(st.sampled_from(ENDINGS))


@settings(max_examples=40, deadline=None)
@example(stream=["明天到了吧。", "明天到了吧？", "明天到了吧？", "3天左右到。", "3天左右到？"], batch=1)
@given(stream=st.lists(texts(), min_size=2, max_size=40), batch=st.sampled_from([1, 7]))
def test_the_topology_decides_as_the_engine(topology, stream: list[str], batch: int) -> None:
    messages = [Message(f"m{i}", t, 1_700_000_000_000 + i * 1000) for i, t in enumerate(stream)]
    for joins, verify in ((1, SMALL.verify), (3, VerifySettings(related_added=False))):
        s = dataclasses.replace(SMALL, verify=verify)
        engine = Engine(s, MemoryStore(TABLES))
        expected = {v.id: v for n in range(0, len(messages), batch)
                    for v in engine.process(messages[n:n + batch])}
        assert topology(messages, s, 5, joins, batch) == expected
