"""What the service reports while it runs, behind two small Protocols.

`Meter` is the part of `stream_dedup.ops.metrics.ServiceMetrics` the loop, the source and the
sink call; `Ready` is `stream_dedup.ops.health.Readiness` as they set it. `stream-dedup run` passes
the real ones (`runtime.run.serve`); everything else (unit tests with fakes, the benchmark,
embedding code) gets the null objects below by default, so the reporting calls are made
unconditionally and cost nothing when nobody watches.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from ..records import Verdict

# The readiness conditions of `stream-dedup run` (`/readyz` lists the ones that do not hold).
STATE_OPEN = "state open"
BROKER_REACHABLE = "broker reachable"
PARTITIONS_ASSIGNED = "partitions assigned"
CONDITIONS = (STATE_OPEN, BROKER_REACHABLE, PARTITIONS_ASSIGNED)


class Meter(Protocol):
    """Counts of the running service (`ServiceMetrics` implements it)."""

    def observe_batch(self, engine: Any, verdicts: Sequence[Verdict], dead_letters: int = 0,
                      topic_counts: Mapping[str, int] | None = None,
                      e2e_latencies_s: Iterable[float] = ()) -> None:
        """One batch whose outputs the broker acknowledged; `engine` is the one that decided
        it (`ServiceMetrics` reads its running totals and its state)."""

    def set_lag(self, partition_lags: Mapping[tuple[str, int], int]) -> None:
        """Records behind the high watermark, per owned (topic, partition)."""

    def count_error(self, kind: str) -> None:
        """One failed call: produce, commit or broker."""

    def refresh_state(self, engine: Any) -> None:
        """Read the state's gauges now (the service does it before its first batch, so that
        the first reading, the slowest, does not delay that batch's outputs)."""


class Ready(Protocol):
    """Readiness conditions, set from the service's thread (`Readiness` implements it)."""

    def set(self, condition: str, ok: bool, detail: str = "") -> None: ...


class NullMeter:
    """Records nothing."""

    def observe_batch(self, engine: Any, verdicts: Sequence[Verdict], dead_letters: int = 0,
                      topic_counts: Mapping[str, int] | None = None,
                      e2e_latencies_s: Iterable[float] = ()) -> None:
        return

    def set_lag(self, partition_lags: Mapping[tuple[str, int], int]) -> None:
        return

    def count_error(self, kind: str) -> None:
        return

    def refresh_state(self, engine: Any) -> None:
        return


class NullReady:
    """Remembers nothing."""

    def set(self, condition: str, ok: bool, detail: str = "") -> None:
        return


NULL_METER: Meter = NullMeter()
NULL_READY: Ready = NullReady()
