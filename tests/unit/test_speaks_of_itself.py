"""The project's files describe the software, never the history of its own development: no
numbered rounds of work or issue numbers, no paths into the developers' shared folders, no
targets set for the work. Readers of the README, the docs, the code, the tests, the benchmarks
and the deploy files need what the software does and why; the rest goes stale at once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]
TREES = ("README.md", "mkdocs.yml", "config.yaml", "pyproject.toml", "docs", "stream_dedup",
         "tests", "bench", "deploy", ".ci")
TEXT = {".py", ".md", ".yaml", ".yml", ".toml", ".sh", ".txt", ".json", ".jsonl", ".cfg", ".ini",
        ".xml", ".properties", ""}
# (what it is, pattern). "#" followed by digits counts as an issue reference unless it is part of
# an HTML character reference (&#65292;) or names another project's tracker (owner/repo#123).
PATTERNS = [
    ("a numbered session", re.compile(r"\bsessions? \d", re.IGNORECASE)),
    ("an issue number", re.compile(r"\bissues? #?\d", re.IGNORECASE)),
    ("an issue reference", re.compile(r"(?<![&\w/\[])#\d+\b(?![0-9a-fA-F])")),
    ("a path into the shared folder", re.compile(r"\.\./shared\b|/work/shared\b|\bshared/(?:bench|design)\b")),
    ("a target of the work", re.compile(r"\bacceptance\b", re.IGNORECASE)),
]
# Only .ci/run knows where the dev stream lies beside a CI checkout.
ALLOWED = {(".ci/run", "a path into the shared folder")}


def _files() -> list[Path]:
    found: list[Path] = []
    for name in TREES:
        top = REPO / name
        if top.is_file():
            found.append(top)
            continue
        for path in sorted(top.rglob("*")) if top.is_dir() else []:
            rel = path.relative_to(REPO)
            if any(part.startswith(".") and part != ".ci" for part in rel.parts) or \
                    "__pycache__" in rel.parts or path.is_dir() or path.suffix not in TEXT:
                continue
            found.append(path)
    return found


def _hits(text: str) -> list[tuple[int, str, str]]:
    return [(n, what, line.strip()) for n, line in enumerate(text.splitlines(), 1)
            for what, pattern in PATTERNS if pattern.search(line)]


def test_no_file_tells_the_history_of_its_own_development() -> None:
    me = Path(__file__).resolve()
    files = [f for f in _files() if f.resolve() != me]
    assert len(files) > 100  # the trees were found
    found = [f"{f.relative_to(REPO)}:{n}: {what}: {line}"
             for f in files for n, what, line in _hits(f.read_text(encoding="utf-8",
                                                                   errors="replace"))
             if (str(f.relative_to(REPO)), what) not in ALLOWED]
    assert not found, "\n".join(found)


# Lines of the kind the check refuses, put together here so that this file holds none itself.
HISTORY = ["the README, " + "session" + " 13's figures", "fixed in " + "issue" + " 7",
           "see #" + "42 for the plan", "the stream in .." + "/shared/bench/x.jsonl.gz",
           "/work" + "/shared/design/notes.md", "the " + "acceptance" + " targets quote these"]


@pytest.mark.parametrize("line", HISTORY)
def test_the_patterns_catch_history(line: str) -> None:
    assert _hits(line)


@pytest.mark.parametrize("line", [
    "价格&#65292;很便宜", "races in Compose v2, docker/compose#10246", "color: #73BF69",
    "session_timeout_ms: 10000", "the consumer's session timeout", "shared anchors"])
def test_the_patterns_leave_the_software_alone(line: str) -> None:
    assert not _hits(line)
