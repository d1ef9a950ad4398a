"""The global scope's property, whatever the interleaving: probes reach the shards and answers
and originals reach the joins in any order, in batches of any size, some of them twice (replays);
still every message is decided once, a message is dropped only as a duplicate of a message
earlier in the total order (event time, then id), and following `matched_id` from a dropped
message ends at a kept one."""

from __future__ import annotations

import random
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_dedup.config import Settings
from stream_dedup.engine.stored import TABLES
from stream_dedup.records import Message
from stream_dedup.scale.join import Join
from stream_dedup.scale.prober import Prober
from stream_dedup.scale.probes import Original, partition_of
from stream_dedup.scale.shard import Shard
from stream_dedup.state import MemoryStore

pytestmark = pytest.mark.property

SETTINGS = Settings()
PROBER = Prober(SETTINGS)
BASES = ["这家酒店的服务非常好，房间干净整洁，下次还会再来入住。",
         "快递速度很快，包装也很严实，手机用起来很流畅，值得购买。",
         "屏幕显示效果一般，电池续航时间太短，总体来说不太满意。"]


def _messages(rng: random.Random, count: int) -> list[Message]:
    """Copies of a few texts with a typo, a cut or an added comment; event times with ties."""
    out = []
    for n in range(count):
        text = rng.choice(BASES)
        edit = rng.randrange(4)
        if edit == 1:
            at = rng.randrange(len(text))
            text = text[:at] + "啊" + text[at + 1:]
        elif edit == 2:
            text = text[: rng.randrange(len(text) // 2, len(text))]
        elif edit == 3:
            text += "转发一下"
        out.append(Message(f"m{n}", text, rng.randrange(10)))
    return out


@given(seed=st.integers(0, 2**32 - 1), count=st.integers(2, 24), batch=st.integers(1, 60))
@settings(max_examples=25, deadline=None)
def test_any_interleaving_keeps_the_order_property(seed: int, count: int, batch: int) -> None:
    rng = random.Random(seed)
    messages = _messages(rng, count)
    probed = PROBER.run(messages)
    probes = [p for m in probed for p in m.probes]
    probes += rng.sample(probes, len(probes) // 4)  # replays
    rng.shuffle(probes)
    shards = defaultdict(lambda: Shard(MemoryStore(TABLES), SETTINGS))
    inbox: list[object] = [Original(m.message.id, m.message.timestamp_ms, m.text, m.fp,
                                    len(m.probes), m.anchors, "in", 0, 0, 0, None, b"", ())
                           for m in probed]
    for start in range(0, len(probes), batch):
        by_shard = defaultdict(list)
        for p in probes[start:start + batch]:
            by_shard[partition_of(p.shard_key, 4)].append(p)
        for n, some in by_shard.items():
            inbox += shards[n].answer(some)
    inbox += rng.sample(inbox, len(inbox) // 4)  # replays
    rng.shuffle(inbox)
    join = Join(MemoryStore(TABLES), SETTINGS)
    verdicts = {}
    for start in range(0, len(inbox), batch):
        some = inbox[start:start + batch]
        for d in join.add([o for o in some if isinstance(o, Original)],
                          [a for a in some if not isinstance(a, Original)]):
            first = verdicts.setdefault(d.verdict.id, d.verdict)
            assert first.decision == d.verdict.decision
            assert d.verdict.replayed or first is d.verdict
    assert set(verdicts) == {m.id for m in messages}
    order = {m.id: (m.timestamp_ms, m.id.encode()) for m in messages}
    matched = {i: v.matched_id for i, v in verdicts.items() if v.is_duplicate}
    for i, m in matched.items():
        assert order[m] < order[i]
    for i in matched:
        while i in matched:
            i = matched[i]
        assert not verdicts[i].is_duplicate
