"""The kernels run as plain Python (`jit.plain`, a batch too small to pay for the compiler) give
exactly what the compiled kernels give: fingerprints, anchors and their mixed and joined runs,
the verification measure, the Bloom filters, and a whole engine's verdicts and stored state
over batches that find candidates, verify them and count common text."""

import dataclasses
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_dedup.config import IndexSettings, Settings, VerifySettings
from stream_dedup.engine import bloom, jit
from stream_dedup.engine import fingerprint as fpr
from stream_dedup.engine.batch import Engine
from stream_dedup.engine.stored import TABLES
from stream_dedup.engine.verify import similarities
from stream_dedup.records import Message
from stream_dedup.state import MemoryStore

pytestmark = pytest.mark.property
# Long texts cross the 255 features summed in one lane and the insertion sort's 128 values.
texts = st.lists(st.text(alphabet="的一是不ab\x00😂", max_size=40)
                 | st.text(alphabet="的是了", min_size=250, max_size=400)
                 | st.text(max_size=12), min_size=1, max_size=6)
CLAUSES = ["酒店位置很好离地铁站很近", "房间干净整洁早餐丰富", "前台服务态度非常热情",
           "隔音效果一般晚上有点吵", "价格合理2晚只要300元", "下次出差还会再来住"]
SETTINGS = dataclasses.replace(Settings(), index=IndexSettings(anchor_postings=2))


def both(call: Callable[[], object]) -> tuple[object, object]:
    """What `call()` returns with plain kernels, then with compiled ones."""
    with jit.plain():
        plain = call()
    jit.load()
    return plain, call()


def same(a: object, b: object) -> bool:
    """Equal values, arrays of the same dtype and values, element by element in containers."""
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, tuple | list):
        return (type(a) is type(b) and len(a) == len(b)
                and all(same(x, y) for x, y in zip(a, b, strict=True)))
    return a == b


@settings(max_examples=60, deadline=None)
@given(texts, st.integers(1, 4), st.integers(1, 9))
def test_fingerprints_and_anchors(ts: list[str], n: int, window: int) -> None:
    batch = fpr.Batch.of(ts)

    def fingerprints() -> tuple:
        values, ends = fpr.anchor_runs(batch, n, window)
        mixed = fpr.mixed_runs(values, ends, np.uint64(2**63 + 5),
                               np.full(len(ts), 3, np.int64))
        return (fpr.simhash(batch, n), fpr.ngram_hashes(batch, n), values, ends, mixed,
                fpr.joined_runs(((values, ends), mixed)), fpr.mix64(fpr.simhash(batch, n)))

    assert same(*both(fingerprints))


@settings(max_examples=60, deadline=None)
@given(texts, st.data())
def test_similarities(ts: list[str], data: st.DataObject) -> None:
    pairs = data.draw(st.lists(st.tuples(st.integers(0, len(ts) - 1),
                                         st.integers(0, len(ts) - 1)), max_size=8))
    first, second = [a for a, _ in pairs], [b for _, b in pairs]
    assert same(*both(lambda: similarities(ts, first, second, VerifySettings())))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=40), st.integers(0, 10**6))
def test_bloom_filters(keys: list[int], step: int) -> None:
    values = np.array(keys, np.uint64)
    times = np.arange(len(keys), dtype=np.int64) * step

    def filters() -> tuple:
        rolling = bloom.RollingBloom(bloom.BloomSizing.from_rate(5, 60, 4, 0.01))
        seen = rolling.contains_add(values, times)
        plain = bloom.Bloom(50, 0.01)
        plain.add(values[::2])
        return seen, rolling.words(), plain.contains(values)

    assert same(*both(filters))


@settings(max_examples=15, deadline=None)
@given(st.lists(st.lists(st.sampled_from(CLAUSES), min_size=1, max_size=3, unique=True)
                .map("，".join), min_size=2, max_size=12))
def test_an_engine_decides_and_stores_the_same(texts_: list[str]) -> None:
    msgs = [Message(f"m{i}", t, 1_700_000_000_000 + i * 1000) for i, t in enumerate(texts_)]

    def run() -> tuple:
        engine = Engine(SETTINGS, MemoryStore(TABLES))
        verdicts = engine.process(msgs[: len(msgs) // 2]) + engine.process(msgs[len(msgs) // 2:])
        state = [list(engine.store.scan(t, b"", b"\xff" * 32)) for t in sorted(TABLES)]
        return [dataclasses.astuple(v) for v in verdicts], state

    assert same(*both(run))
