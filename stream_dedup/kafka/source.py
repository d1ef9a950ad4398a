"""The input edge: a kafka-python consumer in a group, polled in batches, committed by hand.

Commits are sent without waiting for the answer (`commit_async`: a round trip to the group
coordinator per batch would add to every live batch's time): the service sends each
batch's commit only after its outputs are acknowledged, and before it polls again. Each commit
carries the latest offsets of every owned partition, so one that failed (the broker away) is
carried by the next; `close` commits them once more and waits for that answer.

Rebalances: a rebalance only runs inside `poll`. Before partitions are revoked, the listener has
the service settle (`before_revoke`: its batch in flight is acknowledged and its commit sent to
the coordinator), so everything done on them is committed when they move. The listener logs the
change and drops the revoked partitions' offsets; commits carry only owned partitions; a commit
refused because the group moved on (`CommitFailedError`) is logged and dropped, and that batch is
replayed by the partitions' next owner, safely (the state knows the ids).

Readiness: "partitions assigned" follows the listener (false while this member owns nothing);
"broker reachable" turns true after each poll that did not fail and false on one that did.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from operator import attrgetter

from kafka import ConsumerGroupMetadata, KafkaConsumer, OffsetAndMetadata, TopicPartition
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.errors import (
    CommitFailedError,
    IllegalGenerationError,
    KafkaError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)

from ..config import KafkaSettings
from .reporting import BROKER_REACHABLE, NULL_METER, NULL_READY, PARTITIONS_ASSIGNED, Meter, Ready
from .retry import Backoff, GaveUp, is_retriable
from .route import InputRecord
from .security import client_security, connect, describe

log = logging.getLogger(__name__)
PARTITION_FETCH_BYTES = 64 * 1024
# Records polled, or waiting in the topic behind them, that make a backlog: the batch is then
# filled from the next fetches (their answers come at once) up to `kafka.poll_batch_size`,
# because fewer, larger batches share the engine's reads and writes and the producer's requests.
# A live feed keeps up with its input (its lag is a few records), so it never waits to fill a
# batch.
BACKLOG_RECORDS = 1000
_timestamp = attrgetter("timestamp")  # the sort key of a batch (in C: no call per record)
# The group moved on: these partitions may belong to another member now.
_REFUSED = (CommitFailedError, RebalanceInProgressError, IllegalGenerationError,
            UnknownMemberIdError)


class _Listener(ConsumerRebalanceListener):
    """Before a revocation has the service `settle` its work; logs each change, tells `owned`
    what this member owns after it, then `then` (a listener of the caller's: `scope: key` closes
    and opens partition state there)."""

    def __init__(self, assignment: Callable[[], set[TopicPartition]],
                 owned: Callable[[set[TopicPartition]], None],
                 then: ConsumerRebalanceListener | None = None,
                 settle: Callable[[], None] = lambda: None) -> None:
        self.assignment = assignment
        self.owned = owned
        self.then = then
        self.settle = settle

    def on_partitions_revoked(self, revoked: Sequence[TopicPartition]) -> None:
        self.settle()
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
        self._done: dict[TopicPartition, int] = {}  # next offsets of acknowledged work
        self._last: dict[TopicPartition, int] = {}  # offset of the last record polled
        self._refused = 0  # commits refused since `commit` last said so
        self._rebalanced = False  # the assignment changed since `poll` last looked
        self._fatal: Exception | None = None  # a commit failed for good (raised by `commit`)
        self._settle: Callable[[], None] = lambda: None
        self.consumer: KafkaConsumer = backoff.call(
            "connecting the consumer",
            lambda: connect("connecting the consumer", settings, self._connect, backoff.give_up),
            settings.connect_timeout_s)
        self.consumer.subscribe(list(settings.input_topics),
                                listener=_Listener(self._assignment, self._owned, listener,
                                                   lambda: self._settle()))
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
            fetch_min_bytes=s.fetch_min_bytes,
            retry_backoff_ms=int(s.retry_backoff_s * 1000),
            reconnect_backoff_max_ms=int(s.retry_backoff_max_s * 1000),
            bootstrap_timeout_ms=int(s.commit_timeout_s * 1000),
            allow_auto_create_topics=False,
            # exactly_once: only committed input, and committed offsets only once no transaction
            # holds them pending (a member taking over waits for the one before it to finish).
            isolation_level=("read_committed" if s.guarantee == "exactly_once"
                             else "read_uncommitted"),
            # Small per-partition fetches interleave the partitions finely, so that a batch
            # sorted by timestamp (see `poll`) is close to the order the records were produced.
            max_partition_fetch_bytes=PARTITION_FETCH_BYTES,
            **client_security(s),
        )

    def _assignment(self) -> set[TopicPartition]:
        return set(self.consumer.assignment() or ())

    def _owned(self, partitions: set[TopicPartition]) -> None:
        self._done = {tp: o for tp, o in self._done.items() if tp in partitions}
        self._last = {tp: o for tp, o in self._last.items() if tp in partitions}
        self._rebalanced = True
        self.ready.set(PARTITIONS_ASSIGNED, bool(partitions),
                       "" if partitions else "this member owns no input partition")

    def before_revoke(self, settle: Callable[[], None]) -> None:
        """Have `settle` run before partitions are revoked: the service completes its batch in
        flight there (it runs inside `poll`, on the consumer's I/O thread while `poll` waits)."""
        self._settle = settle

    def topics(self) -> set[str]:
        """Names of the topics the cluster has."""
        return self.backoff.call("listing topics", self.consumer.topics)

    def poll(self, wait: bool = True) -> list[InputRecord]:
        """Up to `poll_batch_size` records: waits at most `batch_wait_ms` for the first ones
        (not at all with `wait` false) and takes what has arrived: one consumer poll returns
        every record fetched so far. Unless there is a backlog (the batch holds
        `BACKLOG_RECORDS`, or as many are in the topic behind the records polled from the
        partitions this member owns): then further polls wait (`batch_wait_ms`) for the next
        fetches' records to fill the batch, and one that found nothing waits once more (on a
        busy host a fetch's answer can take longer than one wait, and the stub of a batch taken
        then would split a backlog into more, smaller batches).
        On a live feed a second poll for what arrived meanwhile finds nothing nearly always,
        and each kafka-python poll costs two round trips to its I/O thread: one poll a batch.

        A rebalance can run inside any of those polls (the listener's callbacks): the records
        polled before it from partitions this member no longer owns are dropped then, for their
        new owner reads them from the last commit, and a decision on them would write to state
        that is no longer this member's. A partition kept through the rebalance keeps its
        position, so its records stay.

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
        wait_ms = s.batch_wait_ms if wait else 0
        late = False  # a backlog's next fetch did not answer within one wait
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
            if self._rebalanced:
                out = self._still_owned(out)
            if not got:
                if late or not out or self._behind() < BACKLOG_RECORDS:
                    break
                late = True
                continue
            for tp, records in got.items():
                out.extend(records)
                self._last[tp] = records[-1].offset
            if len(out) < BACKLOG_RECORDS and self._behind() < BACKLOG_RECORDS:
                break  # a live feed: that poll returned every record fetched so far
            wait_ms = s.batch_wait_ms
        out.sort(key=_timestamp)
        return out

    def _still_owned(self, records: list[InputRecord]) -> list[InputRecord]:
        """`records` less those of partitions moved to another member by a rebalance."""
        self._rebalanced = False
        owned = {(tp.topic, tp.partition) for tp in self._assignment()}
        kept = [r for r in records if (r.topic, r.partition) in owned]
        if len(kept) < len(records):
            log.info("dropped %d records polled before a rebalance moved their partitions to "
                     "another member (it reads them from the last commit)",
                     len(records) - len(kept))
        return kept

    def _behind(self) -> int:
        """Records in the topic after the last ones polled from each owned partition, by the
        high watermarks of the last fetches (known locally: no request). All of them, not only
        those of the last poll: a poll that caught one partition's end while the others are
        far behind returned a stub of a batch."""
        behind = 0
        for tp, last in self._last.items():
            try:
                high = self.consumer.highwater(tp)
            except KafkaError:  # revoked meanwhile
                continue
            if high is not None:
                behind += max(high - last - 1, 0)
        return behind

    def commit(self, offsets: dict[tuple[str, int], int]) -> bool:
        """Send the commit of these next offsets (work whose outputs are acknowledged), with
        those of every other owned partition, and return without waiting for the answer.

        Answers arrive during later polls and commits. Returns False when a commit sent earlier
        was refused because the group moved on (its batch is replayed by the partitions' next
        owner), True otherwise; raises the error of one that failed for good (not authorized).
        """
        if self._fatal is not None:
            raise self._fatal
        owned = self._assignment()
        self._done.update((tp, o) for tp, o in ((TopicPartition(t, p), o)
                                                for (t, p), o in offsets.items()) if tp in owned)
        if self._done:
            try:
                self.consumer.commit_async(_request(self._done), callback=self._answered)
            except KafkaError as exc:
                if not exc.retriable:
                    raise
                self._failed(exc)
        refused, self._refused = self._refused, 0
        return not refused

    def _answered(self, offsets: dict[TopicPartition, OffsetAndMetadata],
                  answer: object) -> None:
        """kafka-python's callback for one commit: an exception, or the broker's response."""
        if isinstance(answer, _REFUSED):
            self._refused += 1
            log.warning("commit refused after a rebalance; the batch will be replayed by the "
                        "partitions' owner error=%s", answer)
        elif isinstance(answer, Exception) and is_retriable(answer):
            self._failed(answer)
        elif isinstance(answer, Exception):
            self._fatal = answer

    def _failed(self, exc: Exception) -> None:
        self.metrics.count_error("broker")
        self.ready.set(BROKER_REACHABLE, False, f"commit failed: {exc}")
        log.warning("commit failed; the next commit carries its offsets error=%s", exc)

    def transaction_group(self, offsets: dict[tuple[str, int], int]
                          ) -> ConsumerGroupMetadata | None:
        """The group metadata to commit these offsets with in a transaction (the broker refuses
        them from a generation that is over), or None when this member may not: it is not in
        the group (a pause past the session timeout; a transactional commit without a
        generation would be accepted) or no longer owns one of their partitions."""
        meta = self.consumer.group_metadata()
        owned = self._assignment()
        if (meta.generation_id < 0 or not meta.member_id
                or any(TopicPartition(t, p) not in owned for t, p in offsets)):
            return None
        return meta

    def rewind(self, offsets: dict[tuple[str, int], int]) -> None:
        """Poll owned partitions from these offsets again (the batches after them were
        dropped); partitions not owned any more start from their committed offsets anyway."""
        owned = self._assignment()
        for (t, p), offset in offsets.items():
            tp = TopicPartition(t, p)
            if tp in owned:
                self.consumer.seek(tp, offset)
                self._last.pop(tp, None)

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
        """Commit the offsets of all acknowledged work and wait for the answer (retrying while
        the broker is away, until the shutdown time runs out), then leave the group (the
        partitions move at once instead of after the session timeout). Once the shutdown time
        has run out (the service said so) it neither commits nor waits."""
        out_of_time = self.backoff.give_up()
        timeout_ms = 0 if out_of_time else int(self.settings.commit_timeout_s * 1000)
        if self._done and not out_of_time:
            request = _request(self._done)
            try:
                self.backoff.call("committing offsets",
                                  lambda: self.consumer.commit(request, timeout_ms=timeout_ms))
            except (*_REFUSED, GaveUp) as exc:
                log.warning("last commit not made; its batches will be replayed error=%s", exc)
        self.consumer.close(autocommit=False, timeout_ms=timeout_ms)


def _request(offsets: dict[TopicPartition, int]) -> dict[TopicPartition, OffsetAndMetadata]:
    return {tp: OffsetAndMetadata(o, "", -1) for tp, o in offsets.items()}
