"""A crash mid-write changes no verdict: whatever prefix of a batch's changelog records reached
the broker, the state restored from it (as `restore.restore` does: whole writes applied, the torn
one set back), given that batch again and the rest of the stream, decides every message as a run
without the crash did (decision and matched id).

Texts are drawn from a few shared clauses and each anchor keeps two posters, so exact repeats,
near copies, colliding buckets and capped postings are common (a torn write's later posters
displace earlier ones); the window is a few messages long, so expiry's tombstones are in the
writes too.
"""

import dataclasses
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_dedup.config import IndexSettings, Settings, WindowSettings
from stream_dedup.engine.batch import Engine
from stream_dedup.engine.stored import TABLES
from stream_dedup.records import Message
from stream_dedup.scale.changelog import ChangelogStore, after_last_end, rollback, to_writes
from stream_dedup.state import MemoryStore

pytestmark = pytest.mark.property

CLAUSES = ["酒店位置很好离地铁站很近", "房间干净整洁早餐丰富", "前台服务态度非常热情",
           "隔音效果一般晚上有点吵", "价格合理性价比很高", "下次出差还会再来住"]
SETTINGS = dataclasses.replace(
    Settings(), index=IndexSettings(anchor_postings=2, anchors_stored=3, max_candidates=3),
    window=WindowSettings(seconds=12.0))


class Recorder:
    """A producer that keeps what was sent, in order: the changelog as far as it got."""

    def __init__(self) -> None:
        self.records: list[tuple[bytes, bytes | None]] = []

    def send(self, topic: str, key: bytes, value: bytes | None, partition: int) -> None:
        self.records.append((key, value))

    def flush(self, timeout: float) -> None:
        pass

    def close(self, timeout: float) -> None:
        pass


Decided = list[tuple[str, str | None]]


def run(engine: Engine, batches: list[list[Message]]) -> Decided:
    return [(str(v.decision), v.matched_id) for batch in batches for v in engine.process(batch)]


texts_st = st.lists(
    st.tuples(st.lists(st.sampled_from(CLAUSES), min_size=2, max_size=3, unique=True),
              st.sampled_from(["", "！", "啊", "了"])).map(lambda t: "，".join(t[0]) + t[1]),
    min_size=2, max_size=30)


@settings(max_examples=60, deadline=None)
@given(texts_st, st.data())
def test_a_crash_anywhere_in_a_write_changes_no_verdict(texts, data) -> None:
    msgs = [Message(f"m{i}", t, 1_700_000_000_000 + i * 1000) for i, t in enumerate(texts)]
    cuts = data.draw(st.lists(st.integers(1, len(msgs) - 1), max_size=5))
    bounds = [0, *sorted(set(cuts)), len(msgs)]
    batches = [msgs[lo:hi] for lo, hi in pairwise(bounds)]
    producer = Recorder()
    engine = Engine(SETTINGS, ChangelogStore(MemoryStore(TABLES), producer, "cl", 0))
    sent_before, decided = [], []
    for batch in batches:
        sent_before.append(len(producer.records))
        decided += run(engine, [batch])
    crashed = data.draw(st.integers(0, len(batches) - 1), label="batch cut")
    end = sent_before[crashed + 1] if crashed + 1 < len(batches) else len(producer.records)
    cut = data.draw(st.integers(sent_before[crashed], end), label="records kept")
    kept = producer.records[:cut]
    complete = after_last_end(kept)
    restored = MemoryStore(TABLES)
    restored.write(to_writes(kept[:complete]))
    restored.write(rollback(restored, kept[complete:]))
    again = run(Engine(SETTINGS, restored), batches[crashed:])
    assert again == decided[len(decided) - len(again):]
