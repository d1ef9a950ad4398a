"""The partition state of the three stages of `scope: global` (`runtime.stage` runs them).

Each stage keeps its state per owned input partition, in a RocksDB store mirrored to the stage's
compacted changelog topic; `PartitionStates` follows the assignment for it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from kafka import KafkaProducer

from ..config import Settings
from ..errors import ConfigError
from ..kafka.retry import Backoff
from ..state import KVStore
from .changelog import ChangelogStore
from .restore import RestoreReport, changelog_producer, ensure_changelog_topics, open_state

log = logging.getLogger(__name__)
T = TypeVar("T")


class PartitionStates(Generic[T]):
    """Per owned partition number: a RocksDB store under `state.path`/<stage>-<n>, mirrored to
    the stage's compacted changelog topic (`restore.open_state`: restored in full, or only
    the records after the checkpoint a clean stop left), and the stage's object `make(store)`
    over it. A partition given away is detached first, so it leaves no checkpoint behind.
    Nothing touches the broker before `start`."""

    def __init__(self, settings: Settings, stage: str, topic: str, partitions: int,
                 make: Callable[[KVStore], T]) -> None:
        self._settings = settings
        self._stage = stage
        self.topic = settings.scale.changelog_for(f"{settings.kafka.group_id}-{stage}", topic)
        self._partitions = partitions
        self._make = make
        self._producer: KafkaProducer | None = None
        self._backoff: Backoff | None = None
        self._stores: dict[int, ChangelogStore] = {}
        self.states: dict[int, T] = {}
        self.reports: dict[int, RestoreReport] = {}

    def start(self, backoff: Backoff) -> None:
        """Create the changelog topic if missing and connect its producer; every partition
        opened from now on restores and flushes with `backoff` (a broker blip is waited out,
        not an exit: `changelog.ChangelogStore.flush`)."""
        sc = self._settings.scale
        ensure_changelog_topics(self._settings.kafka, {self.topic: self._partitions},
                                sc.changelog_max_record_bytes)
        self._producer = changelog_producer(self._settings.kafka, sc.changelog_max_record_bytes)
        self._backoff = backoff

    def own(self, numbers: set[int]) -> None:
        """Close what is no longer owned; restore and open what is newly owned."""
        for n in sorted(set(self._stores) - numbers):
            store = self._stores.pop(n)
            store.detach()
            store.close()
            del self.states[n]
            del self.reports[n]
            log.info("state closed stage=%s partition=%d", self._stage, n)
        for n in sorted(numbers - set(self._stores)):
            self._open(n)

    def _open(self, n: int) -> None:
        if self._producer is None:
            raise RuntimeError(f"stage {self._stage}: partition {n} opened before start()")
        path = Path(self._settings.state.path) / f"{self._stage}-{n}"
        store, report = open_state(self._settings, str(path), self._producer, self.topic, n,
                                   self._backoff)
        log.info("state restored stage=%s partition=%d records=%d bytes=%d seconds=%.2f",
                 self._stage, n, report.records, report.bytes, report.seconds)
        self._stores[n] = store
        self.states[n] = self._make(store)
        self.reports[n] = report

    def flush(self, timeout_s: float) -> int:
        """Wait for the broker's acknowledgement of every changelog record sent; returns how
        many it acknowledged (the offsets the owned changelog partitions moved by)."""
        before = sum(store.end_offset for store in self._stores.values())
        for store in self._stores.values():
            store.flush(timeout_s)
        return sum(store.end_offset for store in self._stores.values()) - before

    def close(self) -> None:
        for store in self._stores.values():
            store.close()
        self._stores.clear()
        self.states.clear()
        self.reports.clear()
        if self._producer is not None:
            self._producer.close()


def check_scope(settings: Settings) -> None:
    """The stages serve `scale.scope: global` only (a config for another scope is a mistake)."""
    if settings.scale.scope != "global":
        raise ConfigError("scale.scope", f"is {settings.scale.scope}; the stages serve the "
                          "global scope", "global")
