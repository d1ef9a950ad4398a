"""What the service loop (`service.Service`) needs of its parts, the source, the sink and the
decider, and the totals it reports: protocols, so the loop runs on Kafka's adapters, on an
engine in a child process, and on fakes in tests alike."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..kafka.route import InputRecord, Output
from ..records import Message, Verdict

STEPS = ("poll", "decode", "engine", "deliver", "commit", "metrics")


class Source(Protocol):
    def poll(self, wait: bool = True) -> list[InputRecord]: ...
    def commit(self, offsets: dict[tuple[str, int], int]) -> bool: ...
    def lags(self) -> dict[tuple[str, int], int]: ...
    def topics(self) -> set[str]: ...
    def before_revoke(self, settle: Callable[[], None]) -> None: ...
    def close(self) -> None: ...
    # exactly_once (`KafkaSource`):
    def transaction_group(self, offsets: dict[tuple[str, int], int]) -> Any: ...
    def rewind(self, offsets: dict[tuple[str, int], int]) -> None: ...


class Sink(Protocol):
    """`send` returns a handle that `complete` waits on (`KafkaSink.Sent`); under exactly_once
    `commit` and `abort` close the transaction `send` opened (`TransactionalSink`); `prepare`
    returns the most bytes a record of each topic may take, or None when it does not know."""

    def prepare(self, topics: Sequence[str]) -> Mapping[str, int] | None: ...
    def send(self, outputs: Sequence[Output]) -> Any: ...
    def complete(self, sent: Any) -> None: ...
    def commit(self, sent: Any, offsets: dict[tuple[str, int], int], group: Any) -> None: ...
    def abort(self, why: str) -> None: ...
    def idle(self) -> None: ...
    def close(self) -> None: ...


class Decider(Protocol):
    """The engine as the service uses it (`stream_dedup.engine.batch.Engine`). One whose `pipelined`
    is true also has `prepare(messages)` (made while the batch before is decided),
    `submit(prepared)` and `result() -> list[Verdict]`, a batch at a time
    (`stream_dedup.runtime.engine_process.EngineProcess`)."""

    def process(self, messages: Sequence[Message]) -> list[Verdict]: ...
    def close(self) -> None: ...


@dataclass(slots=True)
class ServiceStats:
    """Running totals of one service run; `seconds` is wall time per loop step."""

    records: int = 0
    outputs: Counter[str] = field(default_factory=Counter)  # unique, duplicate, dead_letter
    duplicates: int = 0  # decided duplicates (also counted when the duplicates topic is off)
    replayed: int = 0
    batches: int = 0
    refused_commits: int = 0
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STEPS, 0.0))
    started: float = field(default_factory=time.monotonic)

    def line(self) -> str:
        """The running totals as ``key=value`` fields: counts since the start, the mean rate
        over `elapsed_s`, and the seconds spent in each loop step (`STEPS`)."""
        elapsed = max(time.monotonic() - self.started, 1e-9)
        busy = " ".join(f"{k}_s={v:.1f}" for k, v in self.seconds.items())
        return (f"records={self.records} unique={self.outputs['unique']} "
                f"duplicates={self.duplicates} dead_letters={self.outputs['dead_letter']} "
                f"replayed={self.replayed} batches={self.batches} "
                f"refused_commits={self.refused_commits} elapsed_s={elapsed:.0f} "
                f"msgs_per_s={self.records / elapsed:.0f} {busy}")
