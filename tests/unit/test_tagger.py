"""jieba's tagger decodes with the numpy decoder once installed, and tags as before."""

from __future__ import annotations

import jieba.posseg as posseg
import pytest
from jieba.posseg.viterbi import viterbi as jieba_viterbi

from stream_dedup.engine import tagger

pytestmark = pytest.mark.unit

# names outside the dictionary, found by the HMM: the tagger's reason to be in the meaning check
TEXTS = ["张路的热浪来了", "付劲松说明天到", "彭的车停在门口", "能和小李一起去"]


def test_install_keeps_the_tags_and_is_done_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(posseg, "viterbi", jieba_viterbi)
    before = [[(p.word, p.flag) for p in posseg.lcut(t)] for t in TEXTS]
    tagger.install()
    installed = posseg.viterbi
    assert isinstance(installed, tagger.Decoder)
    tagger.install()
    assert posseg.viterbi is installed
    assert [[(p.word, p.flag) for p in posseg.lcut(t)] for t in TEXTS] == before


def test_each_characters_emissions_are_the_models() -> None:
    """Every character the model emits (traditional ones among them, which it lists no states
    for) and some it does not: the decoder's row holds each state's log-probability of it."""
    decoder = tagger.Decoder(posseg.char_state_tab_P, posseg.start_P, posseg.trans_P,
                             posseg.emit_P)
    emitted = {ch for table in posseg.emit_P.values() for ch in table}
    for ch in [*sorted(emitted), "x", "😀", "\ud800"]:
        row = [posseg.emit_P[state].get(ch, tagger._MIN_FLOAT) for state in decoder.states]
        assert decoder._emissions(ch).tolist() == row, ch
