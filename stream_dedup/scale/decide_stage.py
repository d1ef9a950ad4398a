"""Stage `decide` (stateful): a consumer group on the originals and answers topics, which have the
same partition count and share the partitioning by message id, so the range assignor gives a
member the same partition numbers of both. Each owned number is one `join.Join` in its own
RocksDB, mirrored to a changelog partition and restored when assigned. A decided original is
routed to the output or duplicates topic with the service's verdict headers (`kafka.route`).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from ..config import Settings
from ..engine import meaning
from ..kafka.retry import Backoff
from ..kafka.route import InputRecord, Output, route
from ..records import Message
from .join import Decided, Join
from .probes import Answer, Original, unpack_answers, unpack_original
from .restore import RestoreReport
from .stage_metrics import KeyCount
from .stages import PartitionStates

log = logging.getLogger(__name__)


class DecideStage:
    name = "decide"

    def __init__(self, settings: Settings) -> None:
        t = settings.topology
        self._settings = settings
        self.topics = (t.originals_topic, t.answers_topic)
        k = settings.kafka
        self.outputs = (k.output_topic, *([k.duplicates_topic] if k.duplicates_topic else []))
        self.poll_batch_size = settings.kafka.poll_batch_size
        if settings.verify.meaning_classes:
            meaning.warm_up()
        self.joins: PartitionStates[Join] = PartitionStates(
            settings, self.name, t.originals_topic, t.join_partitions,
            lambda store: Join(KeyCount(store, ("docs",), check=True), settings))

    def start(self, backoff: Backoff) -> None:
        self.joins.start(backoff)

    def own(self, partitions: set[tuple[str, int]]) -> set[tuple[str, int]]:
        """Join state for each partition number owned in both topics; records of a number owned
        in one topic only are not served (the assignor gave them apart: logged)."""
        t = self._settings.topology
        originals = {p for topic, p in partitions if topic == t.originals_topic}
        answers = {p for topic, p in partitions if topic == t.answers_topic}
        if originals != answers:
            log.error("originals and answers are not co-partitioned: originals=%s answers=%s "
                      "(the decide group needs the range assignor and equal partition counts)",
                      sorted(originals), sorted(answers))
        both = originals & answers
        self.joins.own(both)
        return {(topic, p) for topic, p in partitions if p in both}

    def release(self, records: Sequence[InputRecord], served: set[tuple[str, int]],
                caught_up: set[tuple[str, int]]) -> list[InputRecord]:
        """Everything now: the shards order what they get themselves."""
        return list(records)

    def handle(self, records: Sequence[InputRecord]) -> list[Output]:
        t = self._settings.topology
        originals: dict[int, list[Original]] = defaultdict(list)
        answers: dict[int, list[Answer]] = defaultdict(list)
        for r in records:
            if r.topic == t.originals_topic:
                originals[r.partition].append(unpack_original(r.value or b""))
            else:
                answers[r.partition] += unpack_answers(r.value or b"")
        outputs: list[Output] = []
        for n in sorted(set(originals) | set(answers)):
            for d in self.joins.states[n].add(originals[n], answers[n]):
                outputs += _route(d, self._settings)
        return outputs

    def flush(self, timeout_s: float) -> int:
        return self.joins.flush(timeout_s)

    def restored(self) -> Mapping[int, RestoreReport]:
        return self.joins.reports

    def gauges(self) -> Mapping[str, float]:
        """Pending joins: one `docs` key per open message (rewritten as answers come, so the
        count looks the keys up: the ones the join has just read)."""
        return {"pending_joins": sum(cast(KeyCount, j.store).keys
                                     for j in self.joins.states.values())}

    def close(self) -> None:
        self.joins.close()


def _route(d: Decided, settings: Settings) -> list[Output]:
    """The service's output of the original record with its verdict."""
    o = d.original
    record = _Record(o.topic, o.partition, o.offset, o.timestamp, o.key, o.value, o.headers)
    return route([record], [Message(o.message_id, o.text, o.ts_ms)], [d.verdict],
                 settings.kafka)


@dataclass(frozen=True, slots=True)
class _Record:
    """The input record an original carries, as `kafka.route` reads records."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
