"""Fingerprint strategies selectable with `fingerprint.strategy` (see fingerprint.Strategy).

The default, `char-simhash`, is the engine's own (`fingerprint.py`). The others are the research
algorithms of the seeds, one module each, all computing over jieba words (`words.py`) and ending
in the same Simhash vote (`votes.py`):

| name | seed | module |
|---|---|---|
| simhash | 002 | simhash_words |
| shingle | 001 | shingle |
| tfidf | 000 (formula 3) | tfidf |
| weighted | 003 | weighted |
| p-simhash | 000 | psimhash |
| e-simhash | 000's ref [11] | esimhash |
| drpkp | 004 | drpkp (Rabin hashes: rabin) |

Those in `config.STATS_STRATEGIES` read corpus statistics (`stats.py`, fitted by `fit.py`).
"""

from __future__ import annotations

from ...config import FingerprintSettings
from ...errors import ConfigError
from ..fingerprint import CharSimhash, Strategy
from . import stats as corpus
from .drpkp import Drpkp
from .esimhash import ESimhash
from .psimhash import PSimhash
from .shingle import ShingleSimhash
from .simhash_words import WordSimhash
from .tfidf import TfidfSimhash
from .weighted import WeightedSimhash


def make_strategy(settings: FingerprintSettings) -> Strategy:
    """The configured strategy, its corpus statistics loaded when it needs them."""
    name = settings.strategy
    if name == "char-simhash":
        return CharSimhash(settings.ngram)
    if name == "simhash":
        return WordSimhash()
    if name == "shingle":
        return ShingleSimhash(settings.shingle_width)
    if name == "drpkp":
        return Drpkp(settings.title)
    if settings.stats is None:  # settings_from_dict refuses this; settings built in code may not
        raise ConfigError("fingerprint.stats", f"fingerprint.strategy {name} needs it")
    stats = corpus.load(settings.stats)
    if name == "tfidf":
        return TfidfSimhash(stats)
    if name == "weighted":
        return WeightedSimhash(stats, settings.title)
    if name == "p-simhash":
        return PSimhash(stats, settings.top_m, settings.mu)
    return ESimhash(stats)
