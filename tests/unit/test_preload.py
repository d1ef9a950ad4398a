"""Bulk load of history: the messages after it are decided exactly as if the engine had decided
the history itself first; repeats of a text are stored as its exact duplicates, repeated ids
skipped, and a state that holds messages refused."""

import gzip
import json
from pathlib import Path

import pytest

from stream_dedup.cli.main import main
from stream_dedup.config import Settings
from stream_dedup.engine.batch import Engine
from stream_dedup.engine.preload import Preload
from stream_dedup.engine.stored import TABLES, Doc, seq_key
from stream_dedup.errors import StateError
from stream_dedup.records import Decision, Message
from stream_dedup.state import MemoryStore

pytestmark = pytest.mark.unit
SAMPLE = Path(__file__).parents[2] / "stream_dedup" / "data" / "sample.jsonl.gz"
T0 = 1_700_000_000_000


def sample(count: int) -> list[Message]:
    with gzip.open(SAMPLE, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for _, line in zip(range(count), f, strict=False)]
    return [Message(r["id"], r["text"], T0 + i) for i, r in enumerate(rows)]


def test_the_messages_after_a_bulk_load_get_the_verdicts_of_one_run() -> None:
    messages = sample(3000)
    history, rest = messages[:2000], messages[2000:]
    whole = Engine(Settings(), MemoryStore(TABLES))
    for start in range(0, len(history), 500):
        whole.process(history[start : start + 500])
    want = whole.process(rest)
    store = MemoryStore(TABLES)
    preload = Preload(Settings(), store)
    preload.add(history[:1200])
    preload.add(history[1200:])
    preload.finish()
    got = Engine(Settings(), store).process(rest)
    assert got == want
    assert {v.decision for v in got} == {Decision.UNIQUE, Decision.EXACT, Decision.NEAR}
    assert preload.stored == 2000


def test_repeats_of_a_text_are_exact_and_repeated_ids_skipped() -> None:
    store = MemoryStore(TABLES)
    preload = Preload(Settings(), store)
    preload.add([Message("a", "今天的天气真的非常好我们去公园散步吧", T0),
                 Message("a", "另一条消息，编号重复了，应当跳过", T0 + 1)])
    preload.add([Message("b", "今天的天气真的非常好，我们去公园散步吧！", T0 + 2),
                 Message("a", "又一条消息，编号也重复了", T0 + 3)])
    preload.finish()
    docs = [Doc.decode(seq, value) for seq, (_, value)
            in enumerate(store.scan("docs", seq_key(0), seq_key(2**64 - 1)), start=1)]
    assert [(d.verdict.id, d.verdict.decision, d.indexed) for d in docs] == [
        ("a", Decision.UNIQUE, True), ("b", Decision.EXACT, False)]
    assert docs[1].verdict.matched_id == "a"
    with pytest.raises(StateError, match="already holds messages"):
        Preload(Settings(), store)


def test_bulk_load_command_builds_a_state_the_service_can_resume(tmp_path: Path,
                                                                  capsys) -> None:
    src = tmp_path / "history.jsonl"
    src.write_text("\n".join(json.dumps({"id": m.id, "text": m.text}, ensure_ascii=False)
                             for m in sample(300)) + "\n{broken\n", encoding="utf-8")
    state = str(tmp_path / "state")
    assert main(["bulk-load", str(src), "--state", state]) == 0
    assert "300 messages stored" in capsys.readouterr().err
    assert main(["bulk-load", str(src), "--state", state]) == 1
    assert "already holds messages" in capsys.readouterr().err
    again = tmp_path / "again.jsonl"
    again.write_text(src.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    decisions = tmp_path / "decisions.jsonl"
    assert main(["dedup", str(again), "--state", state, "--resume", "--quiet", "-o",
                 str(tmp_path / "out.jsonl"), "--decisions", str(decisions)]) == 0
    verdict = json.loads(decisions.read_text(encoding="utf-8"))
    assert verdict["verdict"] == "unique" and verdict["reason"] == "unique: loaded with the history"
