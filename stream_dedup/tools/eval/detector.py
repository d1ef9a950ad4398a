"""What the evaluation needs from anything it scores: our engine and the anchors alike."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from stream_dedup.records import Message


class Detector(Protocol):
    """A duplicate detector fed one stream, batch by batch, in arrival order.

    `flags` returns one bool per message of the batch, True when the message repeats an earlier
    message of the stream (earlier batches or earlier in this batch). The detector keeps its own
    state between calls; a fresh detector has seen nothing.
    """

    name: str

    def flags(self, batch: Sequence[Message]) -> list[bool]: ...


@runtime_checkable
class StageTimed(Protocol):
    """A detector that also reports where its time goes.

    `stage_seconds` gives the seconds spent in each stage since the detector was made, so the
    runner can turn them into per-stage throughput. Anchors are libraries seen as a whole and do
    not offer it.
    """

    def stage_seconds(self) -> dict[str, float]: ...
