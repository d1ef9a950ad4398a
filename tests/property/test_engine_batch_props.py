"""The engine's verdicts do not depend on how the stream is cut into batches.

Texts are drawn from a few shared clauses, so anchors and block buckets collide often, and each
anchor remembers only two posters: the case where a batch could see more than one message at a
time would (the stored posting list plus the batch's own posters).
"""

import dataclasses
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_dedup.config import IndexSettings, Settings
from stream_dedup.engine.batch import Engine
from stream_dedup.engine.stored import TABLES
from stream_dedup.records import Message
from stream_dedup.state import MemoryStore

pytestmark = pytest.mark.property

CLAUSES = ["酒店位置很好离地铁站很近", "房间干净整洁早餐丰富", "前台服务态度非常热情",
           "隔音效果一般晚上有点吵", "价格合理性价比很高", "下次出差还会再来住"]
SETTINGS = dataclasses.replace(
    Settings(), index=IndexSettings(anchor_postings=2, anchors_stored=3, max_candidates=3))


def verdicts(texts: list[str], cuts: list[int]) -> list[tuple[str, str | None]]:
    engine = Engine(SETTINGS, MemoryStore(TABLES))
    msgs = [Message(f"m{i}", t, 1_700_000_000_000 + i * 1000) for i, t in enumerate(texts)]
    bounds = [0, *sorted(set(cuts)), len(msgs)]
    out = []
    for lo, hi in pairwise(bounds):
        out += [(v.decision.value, v.matched_id) for v in engine.process(msgs[lo:hi])]
    return out


texts_st = st.lists(
    st.lists(st.sampled_from(CLAUSES), min_size=2, max_size=4, unique=True).map("，".join),
    min_size=2, max_size=30)


@settings(max_examples=60, deadline=None)
@given(texts_st, st.data())
def test_any_batching_gives_the_verdicts_of_one_message_at_a_time(texts, data) -> None:
    cuts = data.draw(st.lists(st.integers(1, len(texts) - 1), max_size=5))
    alone = verdicts(texts, list(range(1, len(texts))))
    assert verdicts(texts, cuts) == alone
    assert verdicts(texts, []) == alone
