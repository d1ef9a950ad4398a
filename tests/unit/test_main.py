"""The command's exit codes: 0 done, 1 an expected failure printed as one line without a
traceback, 130 interrupted; each command runs its own handler."""

import subprocess
import sys
from pathlib import Path

import pytest

from stream_dedup.cli import main as cli
from stream_dedup.cli.main import main
from stream_dedup.errors import StateError

pytestmark = pytest.mark.unit


def test_bad_config_is_one_line_without_traceback(tmp_path: Path, capsys) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("verify:\n  min_jaccard: 7\n", encoding="utf-8")
    assert main(["dedup", "--config", str(cfg), "-o", "-"]) == 1
    err = capsys.readouterr().err
    assert "verify.min_jaccard" in err and "Traceback" not in err
def test_an_expected_failure_is_one_line_and_exit_1(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    def locked(args: object, settings: object) -> int:
        raise StateError("cannot open the state directory /s: it is locked")

    monkeypatch.setattr("stream_dedup.cli.file_mode.cmd_check", locked)
    assert main(["check", "a", "b"]) == 1
    assert capsys.readouterr().err == (
        "stream-dedup: cannot open the state directory /s: it is locked\n")


def test_an_interrupt_is_exit_130(monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted(args: object, settings: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr("stream_dedup.cli.file_mode.cmd_dedup", interrupted)
    assert main(["dedup", "-o", "-"]) == 130
    assert capsys.readouterr().err == "stream-dedup: interrupted\n"


def test_each_command_runs_its_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    for name in ("dedup", "check", "eval", "fit", "audit", "run", "produce", "topics", "demo",
                 "stage"):
        module, handler = cli.HANDLERS[name]
        monkeypatch.setattr(f"stream_dedup.cli.{module}.{handler}",
                            lambda args, settings, name=name: ran.append(name) or 7)
    monkeypatch.setattr("stream_dedup.runtime.lifecycle.quiet_kafka_logs", lambda: None)
    assert main(["check", "a", "b"]) == 7 and main(["topics", "create"]) == 7
    assert main(["stage", "index"]) == 7
    assert ran == ["check", "topics", "stage"]


def test_file_mode_imports_neither_kafka_clients_nor_the_inspector() -> None:
    """A file run starts without loading what only the service and the inspector use."""
    code = ("import sys; from stream_dedup.cli.main import main; main(['check', 'a', 'b']); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'kafka', 'confluent_kafka', 'jinja2', 'prometheus_client'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"
