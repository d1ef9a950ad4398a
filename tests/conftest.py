"""Fixtures every test folder shares (this folder is on sys.path through this file, so tests may
import `dev_stream`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from dev_stream import dev_stream_path

from stream_dedup.config import Settings
from stream_dedup.engine import jit
from stream_dedup.engine.mood import kept_ending
from stream_dedup.engine.stored import TABLES
from stream_dedup.records import Message, Verdict
from stream_dedup.scale.join import Join
from stream_dedup.scale.prober import Prober
from stream_dedup.scale.probes import Original, partition_of
from stream_dedup.scale.shard import Shard
from stream_dedup.state import MemoryStore

Topology = Callable[[Sequence[Message], Settings, int, int, int], dict[str, Verdict]]


@pytest.fixture(scope="session", autouse=True)
def compiled_kernels() -> None:
    """Every test runs the compiled kernels, whatever ran before it: an engine would run a small
    batch's as plain Python until something loads numba (`engine.jit`), which
    tests/property/test_jit_props.py and tests/unit/test_jit.py check apart."""
    jit.load()


@pytest.fixture
def dev_stream() -> Path:
    """The labelled dev stream (see tests/dev_stream.py)."""
    return dev_stream_path()


def _topology(messages: Sequence[Message], settings: Settings, shards: int, joins: int,
              batch: int) -> dict[str, Verdict]:
    """The global scope's three stages in one process, fed in total order, batch by batch:
    the verdict of every message by id."""
    index = [Shard(MemoryStore(TABLES), settings) for _ in range(shards)]
    decide = [Join(MemoryStore(TABLES), settings) for _ in range(joins)]
    prober = Prober(settings)
    got: dict[str, Verdict] = {}
    for n in range(0, len(messages), batch):
        probes, originals, answers = defaultdict(list), defaultdict(list), defaultdict(list)
        for p in prober.run(messages[n:n + batch]):
            for probe in p.probes:
                probes[partition_of(probe.shard_key, shards)].append(probe)
            m = p.message
            o = Original(m.id, m.timestamp_ms, p.text, p.fp, len(p.probes), p.anchors, "in", 1,
                         9, m.timestamp_ms, None, b"{}", (), p.clauses,
                         kept_ending(p.text, m.text))
            originals[partition_of(o.message_id.encode(), joins)].append(o)
        for part, items in probes.items():
            for a in index[part].answer(items):
                answers[partition_of(a.message_id.encode(), joins)].append(a)
        for part, join in enumerate(decide):
            got.update((d.verdict.id, d.verdict) for d in join.add(originals[part],
                                                                   answers[part]))
    return got


@pytest.fixture(scope="session")
def topology() -> Topology:
    """A pure function (each call builds its own stages): safe to share across the inputs of
    a hypothesis test."""
    return _topology
