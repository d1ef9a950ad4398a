"""The fingerprint stage's probes of a message, numbered in order: its exact hash, one per block
table of each fingerprint row, and one per anchor (posted anchors carry the text, the others are
looked up only); a message with no text left makes the exact probe alone."""

import dataclasses

import numpy as np
import pytest

from stream_dedup.config import ExactSettings, Settings
from stream_dedup.engine.exact import content_hash
from stream_dedup.engine.features import features
from stream_dedup.engine.strategies import make_strategy
from stream_dedup.records import Message
from stream_dedup.scale.prober import Prober
from stream_dedup.scale.probes import ANCHOR, BLOCK, EXACT, LOOKUP

pytestmark = pytest.mark.unit
SETTINGS = Settings()
SHORT, LONG = "物流很快包装也很好", "酒店位置很好，离地铁站很近，房间干净整洁，早餐品种也比较丰富"


def test_probes_are_numbered_exact_then_blocks_then_anchors() -> None:
    (probed,) = Prober(SETTINGS).run([Message("m1", SHORT, 123)])
    kinds = [p.kind for p in probed.probes]
    assert [p.index for p in probed.probes] == list(range(len(kinds)))
    assert kinds[0] == EXACT and probed.probes[0].value == content_hash(probed.text, SHORT)
    blocks = kinds.count(BLOCK)
    assert blocks > 0 and kinds[1:1 + blocks] == [BLOCK] * blocks
    assert set(kinds[1 + blocks:]) <= {ANCHOR, LOOKUP}
    assert all(p.ts_ms == 123 and p.message_id == "m1" for p in probed.probes)


def test_posted_anchors_carry_the_text_and_the_rest_are_lookups() -> None:
    messages = [Message("s", SHORT, 1), Message("l", LONG, 2)]
    probed = Prober(SETTINGS).run(messages)
    strategy = make_strategy(SETTINGS.fingerprint)
    f = features([p.text for p in probed], np.zeros(2, np.uint64), strategy,
                 SETTINGS.fingerprint, SETTINGS.index)
    for i, p in enumerate(probed):
        anchors = [q for q in p.probes if q.kind in (ANCHOR, LOOKUP)]
        posted = [q for q in anchors if q.kind == ANCHOR]
        assert sorted(q.value for q in anchors) == sorted(f.anchors[i].tolist())
        assert sorted(q.value for q in posted) == sorted(f.posted_anchors(i).tolist())
        assert all(q.text == p.text and q.fp == p.fp for q in posted)
        assert all(q.text == "" and q.fp == 0 for q in anchors if q.kind == LOOKUP)
        assert p.anchors == tuple(f.families[i].tolist())


def test_a_message_with_no_text_left_makes_the_exact_probe_alone() -> None:
    (probed,) = Prober(SETTINGS).run([Message("e", "[哈哈] !!!", 1)])
    assert probed.text == "" and [p.kind for p in probed.probes] == [EXACT]
    assert probed.probes[0].value == content_hash("", "[哈哈] !!!")


def test_without_the_exact_stage_there_is_no_exact_probe() -> None:
    settings = dataclasses.replace(SETTINGS, exact=ExactSettings(enabled=False))
    (probed,) = Prober(settings).run([Message("m", SHORT, 1)])
    assert EXACT not in [p.kind for p in probed.probes] and probed.probes[0].index == 0
