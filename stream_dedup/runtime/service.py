"""The service loop: batches decided one after another, offsets committed only after the outputs
are acknowledged.

Per batch, in this order (the order is the delivery guarantee):

1. Poll the partitions this member owns: wait up to `kafka.batch_wait_ms` for the first records,
   then take what has already arrived, up to `kafka.poll_batch_size` (the batch follows the load:
   small and quick when the input is thin, filled from further fetches when it is a backlog; the
   broker holds a fetch until `kafka.fetch_min_bytes` arrived or that wait passed, so a live
   feed's batches are tens of records, and each batch's fixed costs are paid less often).
2. Decode each record into a message or a dead letter (never raises).
3. The engine decides the messages in order against one index for all partitions; their
   verdicts come back only after the state write (verdicts and ids) is durable.
4. Route: one output record per input record, to the output, duplicates or dead-letter topic.
5. Send every output to the producer, without waiting.
6. Complete the batch before it (the one in flight): wait until the broker acknowledged each of
   its outputs (re-sending what failed), then commit the next offset of every partition in it.
   The commit is sent, not waited for (`KafkaSource.commit`): only acknowledged work is ever
   committed, and `close` commits once more and waits for the answer.
This batch is then the one in flight. It is completed (step 6) by the next batch, by a poll that
finds nothing, before partitions are revoked in a rebalance, and when the service stops.

An engine in a process of its own (`runtime.engine_process.EngineProcess`, `engine.process: child`)
decides a batch while this process takes the batch before it through steps 4-6 and polls and
decodes the next: a batch is handed over (3) after the previous one's verdicts came back, and
goes through 4-6 in the next step. While a batch is being decided, the poll takes only what has
arrived, without waiting: when nothing has, the batch goes through 4-6 at once (a thin feed's
records do not wait for the next one's). Settling (a poll that finds nothing, a revoke, the
stop) takes the batch being decided through 4-6 first. The order of 3-6 for each batch, and so
the guarantee, is the same.

Why one batch in flight: the broker acknowledges a batch while the next one is polled and decided
(waiting for a round trip per batch would take a large share of a live feed's batch time), and
its records are on
their way after `kafka.linger_ms` instead of after the previous batch's acknowledgements.

A crash before 3 completes replays the batch as new; a crash after it (the batch in flight, or
the one before it, not committed yet) replays it too, and the engine then returns each message's
first verdict (`replayed`), so the same outputs are written again: at-least-once, never lost,
never "a duplicate of itself".

`kafka.guarantee: exactly_once` (`kafka/transaction.py`) changes steps 5 and 6: a batch's
outputs go out inside a transaction, and step 6 (wait for the acknowledgements, add the next
offsets with the consumer's group metadata, commit) comes before the next batch's outputs open
the next transaction; a live feed's batch (fewer than `BACKLOG_RECORDS` records) commits right
after it is sent, since its outputs are visible to read_committed consumers only then. A crash
leaves the transaction open and the restarted instance aborts it;
a transaction aborted while running (fenced by the group or by another producer, an output that
could not be written) drops the batches after it too, and the source polls from the aborted
batch's first records again. Either way the batch is decided again from the state: each message
found there gets its first verdict, emitted in the new transaction, so a `read_committed`
consumer sees exactly one committed output per input.
Stopping (SIGTERM/SIGINT via `Shutdown.request`) lets the current batch finish steps 4-6 and
completes it within `kafka.shutdown_timeout_s`, then closes the consumer, the producer and the
engine.

The cyclic garbage collector is paused during each step (`collector.paused`) and runs between
steps: it ran ~550 times in the sustained phase of bench/kafka_bench.py, re-examining each batch's
records, outputs and futures, 0.18-0.21 s of a ~2.6 s phase; paused, 3-4 times, 0.05-0.09 s.

Latency: the run pays the one-off costs before its first poll (the producer learns the output
topics in `check_topics`; the state gauges are read once; what the start loaded is frozen out of
the garbage collector's full passes), so that no batch waits for them.

Reporting (`kafka.reporting.Meter`, nothing by default): a batch is counted once its outputs are
acknowledged, a refused commit after step 6, and then the lag of every owned partition. A log
line of running totals goes out every `PROGRESS_EVERY_S`, and one at the end.
"""

from __future__ import annotations

import gc
import logging
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import collector
from ..config import Settings
from ..kafka.reporting import NULL_METER, NULL_READY, STATE_OPEN, Meter, Ready
from ..kafka.retry import GaveUp, Shutdown, TransactionAborted, stopped_how
from ..kafka.route import InputRecord, Output, decode_batch, first_offsets, next_offsets, route
from ..kafka.source import BACKLOG_RECORDS
from ..kafka.topics import configured_topics
from ..ops.recent import RecentVerdicts
from ..records import DeadLetter, Message, Verdict
from .contracts import Decider, ServiceStats, Sink, Source
from .lifecycle import close_all, require_topics

PROGRESS_EVERY_S = 60.0
log = logging.getLogger(__name__)
# How long the engine (the main thread) may hold the GIL before kafka-python's I/O threads (the
# consumer's fetches and commits, the producer's sends and acknowledgements) get a turn, chosen
# per batch (`pace_threads`). A small batch means the input is thin and latency counts: with
# Python's 5 ms each of their steps waits behind the engine, which raises a live feed's p99
# from input to output. A batch of `BACKLOG_RECORDS` or more means a backlog (the source fills
# such a batch from further fetches), where records wait in the topic anyway and frequent
# switching costs throughput, so Python's default stays.
LATENCY_SWITCH_S = 0.0005
BACKLOG_SWITCH_S = 0.005


def pace_threads(records: int) -> None:
    """Set the GIL switch interval for a batch of `records` (see LATENCY_SWITCH_S)."""
    sys.setswitchinterval(BACKLOG_SWITCH_S if records >= BACKLOG_RECORDS else LATENCY_SWITCH_S)
# Wall time per loop step; "deliver" is sending (5) and waiting for acknowledgements (6),
# "metrics" the reporting.
@dataclass(frozen=True, slots=True)
class _Deciding:
    """A batch handed to a pipelined engine whose verdicts were not taken yet."""

    records: list[InputRecord]
    decoded: list[Message | DeadLetter]


@dataclass(frozen=True, slots=True)
class _InFlight:
    """A decided batch whose outputs were sent, not yet acknowledged nor committed."""

    records: list[InputRecord]
    verdicts: list[Verdict]
    texts: list[str]  # of the verdicts' messages, in order (the inspector's ring keeps them)
    outputs: list[Output]
    sent: Any


class Service:
    """Runs the loop until `shutdown` is requested; see the module docstring for the steps.

    `metrics` is told of every batch (`ServiceMetrics` reads the running totals and the state of
    `engine`, so it gets the real `Engine`); `ready` loses "state open" when the service stops.
    `recent` (the inspector's ring) gets every acknowledged batch's verdicts with their texts,
    and the candidates tried when the engine has an `on_candidates` hook (`Engine`, and
    `EngineProcess`, which sends them back from its child).
    """

    def __init__(self, settings: Settings, engine: Decider, source: Source, sink: Sink,
                 shutdown: Shutdown, metrics: Meter = NULL_METER,
                 ready: Ready = NULL_READY, recent: RecentVerdicts | None = None) -> None:
        self.settings = settings
        self.engine = engine
        self.source = source
        self.sink = sink
        self.shutdown = shutdown
        self.metrics = metrics
        self.ready = ready
        self.recent = recent
        if recent is not None and hasattr(engine, "on_candidates"):
            engine.on_candidates = recent.candidates_tried
        self.stats = ServiceStats()
        self._in_flight: _InFlight | None = None
        self._deciding: _Deciding | None = None
        self._pipelined = getattr(engine, "pipelined", False)  # `submit` and `result` too
        self._transactional = settings.kafka.guarantee == "exactly_once"
        self.limits: Mapping[str, int] | None = None  # bytes a record of each output topic
        # may take (`Sink.prepare`)
        source.before_revoke(self.complete)

    def check_topics(self) -> None:
        """Fail at start, naming the topic, when a configured topic does not exist (the producer
        would otherwise block on it batch after batch); then have the producer learn the output
        topics, so that the first batches do not wait for it, and read the most bytes a record
        of each may take (an output over it becomes a cut dead letter, `kafka.oversize`)."""
        k = self.settings.kafka
        wanted = configured_topics(k)
        require_topics(k, wanted, self.source.topics())
        self.limits = self.sink.prepare(wanted[len(k.input_topics):])

    def run(self) -> ServiceStats:
        """Process batches until stopped; then close everything. Returns the totals."""
        # What was loaded since the engine froze its dictionaries (the clients, the metrics
        # server) lives as long as the process too: out of the collector's sight, a full
        # collection no longer walks it and stalls a batch.
        gc.freeze()
        self.metrics.refresh_state(self.engine)
        last_report = time.monotonic()
        try:
            while not self.shutdown.requested:
                with collector.paused():
                    self.step()
                if time.monotonic() - last_report >= PROGRESS_EVERY_S:
                    last_report = time.monotonic()
                    log.info("progress %s", self.stats.line())
        except GaveUp as exc:
            log.warning("%s (%s): the last batch was not committed and will be replayed on "
                        "restart", stopped_how(exc), exc)
        finally:
            self.close()
        log.info("stopped %s", self.stats.line())
        return self.stats

    def step(self) -> int:
        """One batch through steps 1-5, then step 6 of the batch in flight before it; returns
        the number of records (0: nothing polled, and the batch in flight completed)."""
        clock = time.perf_counter
        seconds = self.stats.seconds
        t0 = clock()
        # 1. Poll a batch from every partition this member owns (what has arrived, without
        # waiting, while a pipelined engine decides the batch before).
        records = self.source.poll(wait=self._deciding is None)
        t1 = clock()
        seconds["poll"] += t1 - t0
        if not records:
            if self._deciding is not None:
                self._finish_deciding()  # nothing arrived meanwhile: deliver it now
                return 0
            self.complete()  # the input paused: nothing to overlap the wait with
            self.sink.idle()
            t2 = clock()
            self.metrics.set_lag(self.source.lags())  # owned partitions change while idle too
            seconds["metrics"] += clock() - t2
            return 0
        pace_threads(len(records))
        # 2. Decode: a message or a dead letter per record.
        decoded = decode_batch(records, self.settings.input,
                               by_key=self.settings.scale.scope == "key")
        t2 = clock()
        seconds["decode"] += t2 - t1
        # 3. Decide, in order, one index for all partitions; durable when the verdicts are back.
        messages = [d for d in decoded if isinstance(d, Message)]
        if self._pipelined:
            prepared = self.engine.prepare(messages)  # while the batch before is decided
            before, self._deciding = self._deciding, None  # not taken twice should it fail
            verdicts = self.engine.result() if before is not None else []
            self.engine.submit(prepared)
            self._deciding = _Deciding(records, decoded)
            seconds["engine"] += clock() - t2
            if before is not None:
                self._deliver(before.records, before.decoded, verdicts)
        else:
            try:
                verdicts = self.engine.process(messages)
            except TransactionAborted:  # a changelog record doomed the transaction (scope key)
                batch, self._in_flight = self._in_flight, None
                self._rewind([*(batch.records if batch else ()), *records])
                return len(records)
            seconds["engine"] += clock() - t2
            self._deliver(records, decoded, verdicts)
        t5 = clock()
        self.metrics.set_lag(self.source.lags())
        seconds["metrics"] += clock() - t5
        return len(records)

    def _deliver(self, records: list[InputRecord], decoded: list[Message | DeadLetter],
                 verdicts: list[Verdict]) -> None:
        """Steps 4-6 of a decided batch."""
        t0 = time.perf_counter()
        # 4. Route each record to its topic with the verdict headers.
        outputs = route(records, decoded, verdicts, self.settings.kafka, self.limits)
        self.stats.seconds["deliver"] += time.perf_counter() - t0
        # 6 first under exactly_once: the transaction before closes, then this one opens.
        if self._transactional and not self._complete_in_flight(later=records):
            return  # aborted: this batch is polled again too
        t1 = time.perf_counter()
        # 5. Send the outputs; the producer sends them while the next batch is decided.
        sent = self.sink.send(outputs)
        self.stats.seconds["deliver"] += time.perf_counter() - t1
        # 6. Complete the batch before this one; this one is in flight now.
        if not self._transactional:
            self._complete_in_flight()
        texts = [d.text for d in decoded if isinstance(d, Message)]
        self._in_flight = _InFlight(records, verdicts, texts, outputs, sent)
        if self._transactional and len(records) < BACKLOG_RECORDS:
            # A live feed: read_committed consumers see the outputs once the transaction
            # commits, so it commits now rather than after the next batch.
            self._complete_in_flight()

    def _finish_deciding(self) -> None:
        """Take the verdicts of the batch a pipelined engine is deciding, then steps 4-6."""
        batch, self._deciding = self._deciding, None
        if batch is None:
            return
        t0 = time.perf_counter()
        verdicts = self.engine.result()
        self.stats.seconds["engine"] += time.perf_counter() - t0
        self._deliver(batch.records, batch.decoded, verdicts)

    def complete(self) -> None:
        """Settle: the batch being decided, if any, through steps 4-6, then step 6 of the batch
        in flight: wait until the broker acknowledged every one of its outputs (re-sending what
        failed), then commit its offsets."""
        self._finish_deciding()
        self._complete_in_flight()

    def _complete_in_flight(self, later: Sequence[InputRecord] = ()) -> bool:
        """Step 6 of the batch in flight. False when its transaction was aborted: then it,
        `later` (a decided batch not sent yet) and the batch being decided are polled again."""
        batch, self._in_flight = self._in_flight, None
        if batch is None:
            return True
        clock = time.perf_counter
        seconds = self.stats.seconds
        if self._transactional:
            t0 = clock()
            committed = self._commit_transaction(batch)
            seconds["commit"] += clock() - t0
            if not committed:
                self._rewind([*batch.records, *later])
                return False
            t1 = t2 = t3 = clock()
            self._observe(batch)
        else:
            t0 = clock()
            self.sink.complete(batch.sent)
            t1 = clock()
            seconds["deliver"] += t1 - t0
            self._observe(batch)
            t2 = clock()
            committed = self.source.commit(next_offsets(batch.records))
            t3 = clock()
            seconds["commit"] += t3 - t2
            if not committed:
                self.stats.refused_commits += 1
                self.metrics.count_error("commit")
        seconds["metrics"] += clock() - t3 + t2 - t1
        self._count(batch.records, batch.verdicts, batch.outputs)
        return True

    def _commit_transaction(self, batch: _InFlight) -> bool:
        """Commit the batch's transaction with its offsets; False when it was aborted."""
        offsets = next_offsets(batch.records)
        group = self.source.transaction_group(offsets)
        try:
            if group is None:
                self.sink.abort("fenced by the group: this member left the group or lost a "
                                "partition of the batch (its partitions moved to another member)")
            self.sink.commit(batch.sent, offsets, group)
        except TransactionAborted:
            self.stats.refused_commits += 1
            return False
        return True

    def _rewind(self, records: Sequence[InputRecord]) -> None:
        """After an aborted transaction: drop the batch being decided and have the source poll
        `records`' partitions from their first records again (the engine then gives every
        message it decided already its first verdict). A decider with `forget` (scope key)
        drops those partitions' local state, which holds the aborted changelog records: it is
        restored from the committed changelog before their next record is decided."""
        deciding, self._deciding = self._deciding, None
        if deciding is not None:
            self.engine.result()
            records = [*records, *deciding.records]
        offsets = first_offsets(records)
        forget = getattr(self.engine, "forget", None)  # scope key: state the changelog lacks
        if forget is not None:
            forget(list(offsets))
        self.source.rewind(offsets)

    def _observe(self, batch: _InFlight) -> None:
        """Tell the metrics, and the inspector's ring, of a batch whose outputs the broker has
        acknowledged."""
        now_ms = time.time() * 1000
        outputs = batch.outputs
        self.metrics.observe_batch(
            self.engine, batch.verdicts,
            dead_letters=sum(o.kind == "dead_letter" for o in outputs),
            topic_counts=Counter(r.topic for r in batch.records),
            e2e_latencies_s=[(now_ms - o.timestamp_ms) / 1000 for o in outputs])
        if self.recent is not None:
            self.recent.add(batch.verdicts, batch.texts, [int(now_ms)] * len(batch.verdicts))

    def _count(self, records: Sequence[InputRecord], verdicts: Sequence[Verdict],
               outputs: Sequence[Output]) -> None:
        s = self.stats
        s.records += len(records)
        s.batches += 1
        s.outputs.update(o.kind for o in outputs)
        s.duplicates += sum(v.is_duplicate for v in verdicts)
        s.replayed += sum(v.replayed for v in verdicts)

    def _complete_last(self) -> None:
        try:
            self.complete()
        except GaveUp as exc:
            log.warning("shutdown time ran out (%s): the last batch was not committed and will "
                        "be replayed on restart", exc)

    def close(self) -> None:
        """Leave the group, close the producer, checkpoint and close the state. Each is tried
        even when an earlier one fails; the first failure is raised after all were tried."""
        self.ready.set(STATE_OPEN, False, "the service is stopping")
        first = close_all([("batch in flight", self._complete_last),
                           ("consumer", self.source.close), ("producer", self.sink.close),
                           ("engine", self.engine.close)])
        if first is not None:
            raise first
