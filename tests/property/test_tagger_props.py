"""The numpy decoder of jieba's part-of-speech HMM finds jieba's own path and score."""

from __future__ import annotations

import jieba.posseg as posseg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jieba.posseg.viterbi import viterbi as jieba_viterbi

from stream_dedup.engine.tagger import Decoder

pytestmark = pytest.mark.property

MODEL = (posseg.char_state_tab_P, posseg.start_P, posseg.trans_P, posseg.emit_P)
DECODER = Decoder(*MODEL)
# Characters the model knows with many states (的, 是), few, and ones it lacks (every state
# tried): the steps where the candidate states differ most.
KNOWN = sorted(posseg.char_state_tab_P)
characters = st.sampled_from(KNOWN) | st.sampled_from("的是了不小老王能和本之") | st.sampled_from(
    "㐀𠀀😀x1")


@settings(max_examples=300, deadline=None)
@given(st.lists(characters, min_size=1, max_size=7).map("".join))
def test_same_path_and_score_as_jieba(obs: str) -> None:
    assert DECODER(obs) == jieba_viterbi(obs, *MODEL)
