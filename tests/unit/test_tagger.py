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
