"""Event-time merge of the input partitions in the fingerprint stage.

A shard answers a probe with what has reached it, so a copy whose probes reach a shard before its
original's misses it (both are kept). A consumer fetches each partition in its own chunks: on a
backlog it may hand over a stretch of one partition before the earlier records of another. So
the fingerprint stage passes a record on only once no partition it owns can still bring an
earlier one: its timestamp is at most the watermark, the smallest newest timestamp seen among
the owned partitions that are not caught up (a partition's records come in timestamp order from
one producer). The rest wait for the next poll. Per partition only a prefix (in offset order) is
passed on, so committing up to it never skips a waiting record; waiting records of a partition
this member loses are dropped (not committed: their next owner reads them).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..kafka.route import InputRecord

Partition = tuple[str, int]


class EventTimeMerge:
    """Holds back records until the owned partitions' watermark passes them."""

    def __init__(self) -> None:
        self._waiting: list[InputRecord] = []
        self._newest: dict[Partition, int] = {}

    def own(self, partitions: set[Partition]) -> None:
        """Forget what belongs to partitions no longer owned."""
        self._waiting = [r for r in self._waiting if (r.topic, r.partition) in partitions]
        self._newest = {p: ts for p, ts in self._newest.items() if p in partitions}

    def release(self, records: Sequence[InputRecord], owned: set[Partition],
                caught_up: set[Partition]) -> list[InputRecord]:
        """The records (waiting ones and `records`) that can go on now, by timestamp."""
        for r in records:
            p = (r.topic, r.partition)
            self._newest[p] = max(self._newest.get(p, r.timestamp), r.timestamp)
        behind = owned - caught_up
        if any(p not in self._newest for p in behind):
            watermark = None  # a partition not read yet may hold anything
        else:
            watermark = min((self._newest[p] for p in behind), default=None)
        pending = self._waiting + list(records)
        if not behind:
            self._waiting = []
            return sorted(pending, key=_timestamp)
        stopped: set[Partition] = set()
        out: list[InputRecord] = []
        self._waiting = []
        for r in sorted(pending, key=lambda r: r.offset):  # each partition in offset order
            p = (r.topic, r.partition)
            if p in stopped or watermark is None or r.timestamp > watermark:
                stopped.add(p)
                self._waiting.append(r)
            else:
                out.append(r)
        return sorted(out, key=_timestamp)


def _timestamp(r: InputRecord) -> int:
    return r.timestamp
