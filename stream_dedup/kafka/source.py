"""The input edge: a kafka-python consumer in a group, polled in batches, committed by hand.

Rebalances need no work of their own here: the service commits each batch before it polls again,
and a rebalance only runs inside `poll`, so when partitions are revoked everything done on them is
already committed. The listener logs the change; a commit refused because the group moved on
(`CommitFailedError`) is logged and dropped, and that batch is replayed by the partitions' next
owner, safely (the state knows the ids).

Readiness: "partitions assigned" follows the listener (false while this member owns nothing);
"broker reachable" turns true after each poll that did not fail and false on one that did.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.errors import (
    CommitFailedError,
    IllegalGenerationError,
    KafkaError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)

from ..config import KafkaSettings
from .observe import BROKER_REACHABLE, NULL_METER, NULL_READY, PARTITIONS_ASSIGNED, Meter, Ready
from .retry import Backoff
from .route import InputRecord
from .security import client_security, connect, describe

log = logging.getLogger(__name__)
PARTITION_FETCH_BYTES = 64 * 1024
# The group moved on: these partitions may belong to another member now.
_REFUSED = (CommitFailedError, RebalanceInProgressError, IllegalGenerationError,
            UnknownMemberIdError)


class _Listener(ConsumerRebalanceListener):
    """Logs each change, tells `owned` what this member owns after it, then `then` (a listener
    of the caller's: `scope: key` closes and opens partition state there)."""

    def __init__(self, assignment: Callable[[], set[TopicPartition]],
                 owned: Callable[[set[TopicPartition]], None],
                 then: ConsumerRebalanceListener | None = None) -> None:
        self.assignment = assignment
        self.owned = owned
        self.then = then

    def on_partitions_revoked(self, revoked: Sequence[TopicPartition]) -> None:
        if revoked:
            log.info("partitions revoked (all done on them is committed) partitions=%s",
                     _names(revoked))
        self.owned(self.assignment() - set(revoked))
        if self.then is not None:
            self.then.on_partitions_revoked(revoked)

    def on_partitions_assigned(self, assigned: Sequence[TopicPartition]) -> None:
        log.info("partitions assigned partitions=%s", _names(assigned))
        self.owned(self.assignment() | set(assigned))
        if self.then is not None:
            self.then.on_partitions_assigned(assigned)

    def on_partitions_lost(self, lost: Sequence[TopicPartition]) -> None:
        log.warning("partitions lost (evicted from the group; uncommitted work is replayed by "
                    "the next owner) partitions=%s", _names(lost))
        self.owned(self.assignment() - set(lost))
        if self.then is not None:
            self.then.on_partitions_lost(lost)


def _timestamp(r: InputRecord) -> int:
    return r.timestamp


def _names(tps: Sequence[TopicPartition]) -> str:
    return ",".join(f"{tp.topic}/{tp.partition}" for tp in sorted(tps)) or "-"


class KafkaSource:
    """Polls batches of records from the input topics and commits what was done."""

    def __init__(self, settings: KafkaSettings, backoff: Backoff, metrics: Meter = NULL_METER,
                 ready: Ready = NULL_READY,
                 listener: ConsumerRebalanceListener | None = None) -> None:
        self.settings = settings
        self.backoff = backoff
        self.metrics = metrics
        self.ready = ready
        self.consumer: KafkaConsumer = backoff.call(
            "connecting the consumer",
            lambda: connect("connecting the consumer", settings, self._connect))
        self.consumer.subscribe(list(settings.input_topics),
                                listener=_Listener(self._assignment, self._owned, listener))
        log.info("consumer subscribed topics=%s group=%s bootstrap=%s security=%s",
                 ",".join(settings.input_topics), settings.group_id, settings.bootstrap_servers,
                 describe(settings))

    def _connect(self) -> KafkaConsumer:
        s = self.settings
        return KafkaConsumer(
            bootstrap_servers=s.bootstrap_servers.split(","),
            client_id=f"{s.client_id}-consumer",
            group_id=s.group_id,
            enable_auto_commit=False,
            auto_offset_reset=s.auto_offset_reset,
            max_poll_records=s.poll_batch_size,
            max_poll_interval_ms=s.max_poll_interval_ms,
            session_timeout_ms=s.session_timeout_ms,
            heartbeat_interval_ms=max(s.session_timeout_ms // 3, 100),
            request_timeout_ms=max(30000, s.session_timeout_ms + 5000),
            fetch_max_wait_ms=min(100, max(s.batch_wait_ms, 1)),
            retry_backoff_ms=int(s.retry_backoff_s * 1000),
            reconnect_backoff_max_ms=int(s.retry_backoff_max_s * 1000),
            bootstrap_timeout_ms=int(s.commit_timeout_s * 1000),
            allow_auto_create_topics=False,
            # Small per-partition fetches interleave the partitions finely, so that a batch
            # sorted by timestamp (see `poll`) is close to the order the records were produced.
            max_partition_fetch_bytes=PARTITION_FETCH_BYTES,
            **client_security(s),
        )

    def _assignment(self) -> set[TopicPartition]:
        return set(self.consumer.assignment() or ())

    def _owned(self, partitions: set[TopicPartition]) -> None:
        self.ready.set(PARTITIONS_ASSIGNED, bool(partitions),
                       "" if partitions else "this member owns no input partition")

    def topics(self) -> set[str]:
        """Names of the topics the cluster has."""
        return self.backoff.call("listing topics", self.consumer.topics)

    def poll(self) -> list[InputRecord]:
        """Up to `poll_batch_size` records: waits at most `batch_wait_ms` for the first ones,
        then takes only what has already arrived.

        Waiting to fill a batch would add its wait to every record's latency when the input is
        thin; when it is thick the fetched records fill the batch at once anyway, so the batch
        size follows the load by itself.

        The batch is sorted by record timestamp (stably: records of one partition with rising
        timestamps keep their order), so within a batch an original is decided before its copy
        in another partition. Across batches the order is the fetcher's interleaving of the
        partitions, which can put a copy before its original (then the copy is kept as unique
        and the original is called its duplicate).
        """
        s = self.settings
        out: list[InputRecord] = []
        wait_ms = s.batch_wait_ms
        while len(out) < s.poll_batch_size:
            try:
                got = self.consumer.poll(timeout_ms=wait_ms,
                                         max_records=s.poll_batch_size - len(out))
            except KafkaError as exc:
                self.metrics.count_error("broker")
                self.ready.set(BROKER_REACHABLE, False, f"poll failed: {exc}")
                if not exc.retriable:
                    raise
                log.warning("poll failed, retrying error=%s", exc)
                self.backoff.wait(s.retry_backoff_s)
                break
            self.ready.set(BROKER_REACHABLE, True)
            if not got:
                break
            for records in got.values():
                out.extend(records)
            wait_ms = 0
        out.sort(key=_timestamp)
        return out

    def commit(self, offsets: dict[tuple[str, int], int]) -> bool:
        """Commit next offsets; True when committed, False when the group took the partitions
        away meanwhile (then the next owner replays them). Retries while the broker is away."""
        if not offsets:
            return True
        request = {TopicPartition(t, p): OffsetAndMetadata(o, "", -1)
                   for (t, p), o in offsets.items()}
        timeout_ms = int(self.settings.commit_timeout_s * 1000)
        try:
            self.backoff.call("committing offsets",
                              lambda: self.consumer.commit(request, timeout_ms=timeout_ms))
        except _REFUSED as exc:
            log.warning("commit refused after a rebalance; the batch will be replayed by the "
                        "partitions' owner error=%s", exc)
            return False
        return True

    def lags(self) -> dict[tuple[str, int], int]:
        """Records after this consumer's position, per owned partition: the high watermark of
        the last fetch minus the position, both known locally (no request to the broker).
        Partitions not fetched from yet (no high watermark) are left out."""
        lags: dict[tuple[str, int], int] = {}
        for tp in self._assignment():
            high = self.consumer.highwater(tp)
            if high is None:
                continue
            try:
                position = self.consumer.position(tp, timeout_ms=0)
            except KafkaError:  # revoked meanwhile, or an offset reset pending
                continue
            if position is not None:
                lags[(tp.topic, tp.partition)] = max(high - position, 0)
        return lags

    def close(self) -> None:
        """Leave the group (the partitions move at once instead of after the session timeout)."""
        self.consumer.close(autocommit=False, timeout_ms=int(self.settings.commit_timeout_s * 1000))
