"""`EngineProcess` on real RocksDB files: the engine in a child process decides exactly as in
this one, its errors come back with their class, its death is a `ServiceError`, and the child of
a parent killed with SIGKILL finishes, closes the state and lets a new one open it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from kafka_helpers import stream_lines

from stream_dedup.config import Settings
from stream_dedup.decode import decode
from stream_dedup.engine.batch import LOOKUPS_ONLY, Engine
from stream_dedup.engine.stored import TABLES
from stream_dedup.errors import ServiceError, StateError
from stream_dedup.records import Message
from stream_dedup.runtime.engine_process import EngineProcess
from stream_dedup.state import open_store

pytestmark = pytest.mark.integration
SETTINGS = Settings()


def messages(n: int) -> list[Message]:
    _, lines = stream_lines(n)
    out = [decode(raw, "dev", str(i), i, SETTINGS.input) for i, raw in enumerate(lines[:n])]
    assert all(isinstance(m, Message) for m in out)
    return out  # type: ignore[return-value]


def test_sends_back_the_candidates_tried_when_asked(tmp_path: Path) -> None:
    msgs = messages(2000)
    engine = Engine(SETTINGS, open_store("rocksdb", str(tmp_path / "here"), TABLES,
                                         lookups_only=LOOKUPS_ONLY))
    here: dict[str, list[str]] = {}
    engine.on_candidates = here.__setitem__
    child = EngineProcess(SETTINGS, str(tmp_path / "child"))
    there: dict[str, list[str]] = {}
    try:
        child.process(msgs[:1000])  # not asked for: none sent
        engine.process(msgs[:1000])
        here.clear()
        child.on_candidates = there.__setitem__
        assert child.process(msgs[1000:]) == engine.process(msgs[1000:])
    finally:
        child.close()
        engine.close()
    assert there == here
    assert any(there.values())


def test_decides_as_the_engine_in_this_process_does(tmp_path: Path) -> None:
    msgs = messages(6000)
    engine = Engine(SETTINGS, open_store("rocksdb", str(tmp_path / "here"), TABLES,
                                         lookups_only=LOOKUPS_ONLY))
    child = EngineProcess(SETTINGS, str(tmp_path / "child"))
    try:
        for i in range(0, len(msgs), 1500):
            batch = msgs[i:i + 1500]
            child.submit(child.prepare(batch))
            assert child.result() == engine.process(batch)
        assert child.process(msgs[:10]) == engine.process(msgs[:10])  # replayed
        assert child.stats.messages == engine.stats.messages == 6010
        assert child.stats.decisions == engine.stats.decisions
        assert child.stored_messages() == engine.stored_messages() > 0
        assert child.exact.bloom.fill_ratio() == 0.0  # asked for: sent with the next batch
        child.process(msgs[:1])
        assert child.exact.bloom.fill_ratio() == engine.exact.bloom.fill_ratio() > 0
        assert child.exact.bloom.estimated_fpr() == engine.exact.bloom.estimated_fpr()
        assert child.store.disk_bytes() > 0
    finally:
        child.close()
        engine.close()
    reopened = EngineProcess(SETTINGS, str(tmp_path / "child"))  # the child closed the state
    try:
        assert reopened.stored_messages() == engine.stats.messages - engine.stats.replayed
    finally:
        reopened.close()


def test_an_error_of_the_child_comes_back_with_its_class(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(StateError, match="cannot create the state directory"):
        EngineProcess(SETTINGS, str(tmp_path / "file" / "state"))


def test_a_child_that_died_is_a_service_error(tmp_path: Path) -> None:
    child = EngineProcess(SETTINGS, str(tmp_path / "state"))
    os.kill(child._proc.pid, signal.SIGKILL)
    with pytest.raises(ServiceError, match=r"engine process exited \(code -9\)"):
        child.process(messages(10))
    child.close()  # nothing left to stop: no error


KILLED_PARENT = textwrap.dedent("""
    import sys
    from stream_dedup.config import Settings
    from stream_dedup.runtime.engine_process import EngineProcess
    from stream_dedup.records import Message
    child = EngineProcess(Settings(), sys.argv[1])
    child.process([Message(f"m{i}", f"第{i}条消息的内容，彼此都不一样的文字{i * 7919}", i)
                   for i in range(200)])
    print(child._proc.pid, flush=True)
    child.submit(child.prepare([Message(f"n{i}", f"另外第{i}条消息，正在决定的时候父进程被杀死", i)
                                for i in range(2000)]))
    sys.stdin.read()  # until killed
""")


def ended(pid: int) -> bool:
    """Gone, or a zombie that nobody reaped yet (an orphan's parent is now init's kind)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status


def test_the_child_of_a_killed_parent_closes_the_state_for_the_next_one(tmp_path: Path) -> None:
    state = str(tmp_path / "state")
    parent = subprocess.Popen([sys.executable, "-c", KILLED_PARENT, state],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        child_pid = int(parent.stdout.readline())
    finally:
        parent.kill()  # SIGKILL while its child decides the second batch
        parent.wait()
    started = time.monotonic()
    again = EngineProcess(SETTINGS, state)  # waits for the orphan to let go of the lock
    try:
        verdicts = again.process([Message("m7", "anything", 7)])
        assert verdicts[0].replayed  # the first batch was durable
        assert again.stored_messages() in (200, 2200)  # the second one too, if it was done
    finally:
        again.close()
    assert ended(child_pid)
    print(f"\nreopened {time.monotonic() - started:.1f} s after the parent was killed")
