"""Our engine as an evaluation detector."""

from __future__ import annotations

from collections.abc import Sequence

from ...config import Settings
from ...engine.batch import open_engine
from ...records import Message


class EngineDetector:
    """The engine as an evaluation detector, with its state in RocksDB (or as configured).

    `name` is the row's method: "stream-dedup" for the configured engine, the strategy's name
    when strategies are compared.
    """

    def __init__(self, settings: Settings, state_path: str, name: str = "stream-dedup") -> None:
        self.name = name
        self.engine = open_engine(settings, state_path)

    def flags(self, batch: Sequence[Message]) -> list[bool]:
        return [v.is_duplicate for v in self.engine.process(batch)]

    def stage_seconds(self) -> dict[str, float]:
        return dict(self.engine.stats.stage_seconds)

    def close(self) -> None:
        self.engine.close()
