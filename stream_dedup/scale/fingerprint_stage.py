"""Stage `fingerprint` (stateless): input records to probes, originals and dead letters.

Records are passed on in event-time order across the partitions this member owns
(`merge.EventTimeMerge`), so that an original's probes leave before its copies'.

Each record is decoded as the service decodes it (a bad one goes to the dead-letter topic with
the service's headers, `kafka.route`); each message is normalized and fingerprinted as the engine
does it (`prober.Prober`). Its probes go to the probes topic, packed one record per partition of
an input batch (`probes.partition_of` the shard key); its original record, with the number of
answers to expect, to the originals topic keyed by message id. The stage loop commits the input
only after all of those are acknowledged.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping, Sequence

from ..config import Settings
from ..engine.mood import kept_ending
from ..kafka.retry import Backoff
from ..kafka.route import InputRecord, Output, decode_batch, route
from ..records import Message
from .merge import EventTimeMerge
from .prober import Prober
from .probes import Original, Probe, pack_original, pack_probes, partition_of
from .restore import RestoreReport


class FingerprintStage:
    name = "fingerprint"

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        t = settings.topology
        self.topics = tuple(settings.kafka.input_topics)
        self.outputs = (t.probes_topic, t.originals_topic, settings.kafka.dead_letter_topic)
        self.poll_batch_size = settings.kafka.poll_batch_size
        self._prober = Prober(settings)
        self._merge = EventTimeMerge()

    def start(self, backoff: Backoff) -> None:
        """Stateless: no changelog to connect (its outputs are retried by the loop's sink)."""

    def own(self, partitions: set[tuple[str, int]]) -> set[tuple[str, int]]:
        """No state to open or restore; records waiting for lost partitions are dropped."""
        self._merge.own(partitions)
        return partitions

    def release(self, records: Sequence[InputRecord], served: set[tuple[str, int]],
                caught_up: set[tuple[str, int]]) -> list[InputRecord]:
        """Records in event-time order across the owned partitions (`merge.EventTimeMerge`)."""
        return self._merge.release(records, served, caught_up)

    def handle(self, records: Sequence[InputRecord]) -> list[Output]:
        k, t = self._settings.kafka, self._settings.topology
        decoded = decode_batch(records, self._settings.input)
        dead = [(r, d) for r, d in zip(records, decoded, strict=True)
                if not isinstance(d, Message)]
        outputs = route([r for r, _ in dead], [d for _, d in dead], [], k)
        found = [(r, d) for r, d in zip(records, decoded, strict=True) if isinstance(d, Message)]
        probed = self._prober.run([d for _, d in found])
        by_partition: dict[int, list[Probe]] = defaultdict(list)
        now = int(time.time() * 1000)
        for (r, _), p in zip(found, probed, strict=True):
            for probe in p.probes:
                by_partition[partition_of(probe.shard_key, t.probes_partitions)].append(probe)
            ident = p.message.id.encode()
            original = Original(p.message.id, p.message.timestamp_ms, p.text, p.fp,
                                len(p.probes), p.anchors, r.topic, r.partition, r.offset,
                                r.timestamp, r.key, r.value, tuple(r.headers or ()),
                                p.clauses, kept_ending(p.text, p.message.text))
            outputs.append(Output("original", t.originals_topic, ident, pack_original(original),
                                  [], r.timestamp, partition_of(ident, t.join_partitions)))
        for n, probes in sorted(by_partition.items()):
            outputs += [Output("probes", t.probes_topic, None, value, [], now, n)
                        for value in pack_probes(probes)]
        return outputs

    def flush(self, timeout_s: float) -> int:
        """Stateless: no changelog."""
        return 0

    def restored(self) -> Mapping[int, RestoreReport]:
        """Stateless: nothing restored."""
        return {}

    def gauges(self) -> Mapping[str, float]:
        """Stateless: no state gauges."""
        return {}

    def close(self) -> None:
        """Stateless: nothing to close."""
