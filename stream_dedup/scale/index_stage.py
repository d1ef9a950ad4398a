"""Stage `index` (stateful): a consumer group on the probes topic; each owned partition is one
shard of the global index (`shard.Shard`) in its own RocksDB, mirrored to a changelog partition
and restored from it when the partition is assigned. Answers go to the answers topic, packed one
record per answers partition of a batch (`probes.partition_of` the message id, as the originals).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import cast

from ..config import Settings
from ..engine.stored import TABLES
from ..kafka.retry import Backoff
from ..kafka.route import InputRecord, Output
from .probes import Answer, pack_answers, partition_of, unpack_probes
from .restore import RestoreReport
from .shard import Shard
from .stage_metrics import KeyCount
from .stages import PartitionStates

RECORDS_PER_BATCH = 24  # packed probe records per batch (each holds up to 256 KiB of probes)
# Entries: every family but `meta` (the shard's counters). A shard puts an entry only under a
# key it does not hold and deletes only keys it holds (expiry): the count needs no lookups.
ENTRY_FAMILIES = tuple(cf for cf in TABLES if cf != "meta")


class IndexStage:
    name = "index"

    def __init__(self, settings: Settings) -> None:
        t = settings.topology
        self._settings = settings
        self.topics = (t.probes_topic,)
        self.outputs = (t.answers_topic,)
        self.poll_batch_size = RECORDS_PER_BATCH
        self.shards: PartitionStates[Shard] = PartitionStates(
            settings, self.name, t.probes_topic, t.probes_partitions,
            lambda store: Shard(KeyCount(store, ENTRY_FAMILIES, check=False), settings))

    def start(self, backoff: Backoff) -> None:
        self.shards.start(backoff)

    def own(self, partitions: set[tuple[str, int]]) -> set[tuple[str, int]]:
        self.shards.own({p for _, p in partitions})
        return partitions

    def release(self, records: Sequence[InputRecord], served: set[tuple[str, int]],
                caught_up: set[tuple[str, int]]) -> list[InputRecord]:
        """Everything now: the shards order what they get themselves."""
        return list(records)

    def handle(self, records: Sequence[InputRecord]) -> list[Output]:
        t = self._settings.topology
        by_shard: dict[int, list] = defaultdict(list)
        for r in records:
            by_shard[r.partition] += unpack_probes(r.value or b"")
        by_partition: dict[int, list[Answer]] = defaultdict(list)
        for n, probes in sorted(by_shard.items()):
            for a in self.shards.states[n].answer(probes):
                by_partition[partition_of(a.message_id.encode(), t.join_partitions)].append(a)
        now = int(time.time() * 1000)
        return [Output("answers", t.answers_topic, None, value, [], now, n)
                for n, answers in sorted(by_partition.items()) for value in pack_answers(answers)]

    def flush(self, timeout_s: float) -> int:
        return self.shards.flush(timeout_s)

    def restored(self) -> Mapping[int, RestoreReport]:
        return self.shards.reports

    def gauges(self) -> Mapping[str, float]:
        return {"index_entries": sum(cast(KeyCount, shard.store).keys
                                     for shard in self.shards.states.values())}

    def close(self) -> None:
        self.shards.close()
