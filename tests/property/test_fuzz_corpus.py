"""Replays the fuzz corpus (`tests/data/fuzz/corpus.jsonl`, kept by `python -m stream_dedup.tools.fuzz`)
and runs a short fuzz campaign: every kept case must still end as a verdict or a dead letter with
a reason, in bounded time. The corpus holds the first record of each outcome class the long runs
met (including the JSON-escaped lone surrogate that once crashed normalization) and the slowest
decodes."""

import base64
import time
from pathlib import Path

import pytest

from stream_dedup.config import Settings
from stream_dedup.engine.batch import Engine
from stream_dedup.engine.stored import TABLES
from stream_dedup.state import MemoryStore
from stream_dedup.tools.fuzz import LIMITS, check_one, load_corpus, main

pytestmark = pytest.mark.property
CORPUS = Path(__file__).resolve().parents[1] / "data" / "fuzz"
CASES = load_corpus(CORPUS)
ENGINE = Engine(Settings(input=LIMITS), MemoryStore(TABLES))


def test_corpus_is_kept() -> None:
    assert len(CASES) >= 10, "tests/data/fuzz/corpus.jsonl is missing or nearly empty"


@pytest.mark.parametrize("case", CASES, ids=[f"{n:03d}" for n in range(len(CASES))])
def test_corpus_case(case: dict) -> None:
    raw = base64.b64decode(case["raw_b64"])
    started = time.monotonic()
    outcome = check_one(ENGINE, raw)
    assert outcome and time.monotonic() - started < 5.0


def test_lone_surrogate_escape_is_a_dead_letter() -> None:
    outcome = check_one(ENGINE, b'{"text": "ok \\udfff broken", "id": "s"}')
    assert outcome.startswith("dead: unpaired surrogate")


def test_short_fuzz_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--count", "3000", "--seed", "7", "--no-save", "--progress-s", "60"]) == 0
    assert '"failures": 0' in capsys.readouterr().out
