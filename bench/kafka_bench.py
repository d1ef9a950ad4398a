"""End-to-end benchmark of the streaming service on a real local broker, with Quix Streams'
exact-dedup recipe as the anchor. Prints figures; it is not a timed test.

    python bench/kafka_bench.py [--bootstrap 127.0.0.1:9092] [--input FILE] [--rate 2000]
                                [--seconds 12] [--warmup 2] [--profile] [--no-quix]
                                [--python-clients] [--engine-process child|inline]
                                [--warm-broker PASSES]
                                [--guarantee at_least_once,exactly_once] [--rounds 5]
                                [--records 700000]

Phases 1 and 2 run for each `kafka.guarantee` (`--guarantee`, both by default, on topics of their
own): phase 1 `--rounds` times (5), the guarantees taking turns, its figures the median round's
(a neighbour's load on a shared host moves single runs by a third); then phase 2 once each. The
run ends with exactly_once's sustained median as a share of at_least_once's.

1. Sustained throughput: the stream, repeated up to `--records` (700,000: over 20 s of input)
   with fresh ids and each round's common characters shifted, so that a round repeats none of
   another's texts (`results.repeated`), is in a 6-partition topic first; the service (in this
   process, its engine where `--engine-process` puts it, as `engine.process` does for
   `stream-dedup run`) decides it from the first poll to the last commit. `--profile` runs this
   phase under cProfile and prints where the time goes, by package and by function.
2. Latency at a fixed offered rate: `stream-dedup run` as a process of its own, fed at the rate
   by `kcat -P` (paced by a small Python process that writes it one line at a time) while one
   `kcat -C` per output, duplicates and dead-letter topic hands this process each record's
   timestamp: (arrival here - input record timestamp) for every record. The first `--warmup`
   seconds of input warm the path up (fresh topics: the brokers' first appends to each
   partition, the clients' first requests, the state's first pages); p50, p99 and max are those
   of the `--seconds` of input after them, and the warm-up's own p99 and max and the p99 of all
   records are printed beside. Then the service's batches and time by loop step (its last log
   line), and how busy the machine's cores were meanwhile, by process (the figures move with
   whatever else runs on it). The clients are kcat (librdkafka, C) because on 2 shared
   cores a kafka-python feeder and reader took 0.40-0.50 cores from the service and the broker;
   in production they run elsewhere. On an empty path (feeder straight to reader, no service)
   both kinds add the same: p50 8-9 ms, p99 16 ms after the first second. `--python-clients`
   feeds with `stream-dedup produce --rate R`'s code and reads with kafka-python instead.
3. Anchor: Quix Streams (state with a TTL, from its "State TTL" cookbook: group_by the text so the
   state is scoped by it, then a stateful filter that drops a text seen within the TTL) on each
   at_least_once round's input topic right after the service: msgs/s from its first to its last
   record, and the service's rate over it round by round (min, median, max).
4. This host, after the phases (shared machines run at very different speeds from one hour to
   the next, and the targets are absolute): the engine alone on the stream (records decoded
   here, batches of `kafka.poll_batch_size`, a fresh state, no Kafka: about what phase 1 could
   reach were Kafka free; its service normalizes beside the engine, a little more), and
   `json.loads` of the records. Last, so that nothing it leaves in this process
   (state, caches, RocksDB's threads) can touch the phases measured.
Without --bootstrap a broker is started with deploy/kafka.sh on port 39092 and stopped after,
and before phase 1 it is warmed by `--warm-broker` passes of phases 1 and 2 (default 4, on
topics of their own; each pass's sustained rate and p99 printed, not counted): a JVM broker
started moments ago runs slower than one that has run for a while (WARM_BROKER_PASSES).
The topics the run made (its own tag in their names, Quix Streams' internal ones included) are
deleted at the end, so that a long-lived local broker does not pile up partitions.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import gzip
import io
import json
import multiprocessing
import os
import pstats
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from contextlib import ExitStack, redirect_stdout
from pathlib import Path

import results as bench_results
from kafka import KafkaConsumer, TopicPartition

from stream_dedup.config import EngineSettings, KafkaSettings, Settings
from stream_dedup.decode import decode
from stream_dedup.engine.batch import open_engine
from stream_dedup.kafka.produce import new_producer, send_lines
from stream_dedup.kafka.retry import Backoff, Shutdown
from stream_dedup.kafka.sink import KafkaSink
from stream_dedup.kafka.source import KafkaSource
from stream_dedup.kafka.topics import admin, configured_topics, create_topics
from stream_dedup.kafka.transaction import TransactionalSink, transactional_id
from stream_dedup.records import DeadLetter
from stream_dedup.runtime.contracts import STEPS
from stream_dedup.runtime.lifecycle import quiet_kafka_logs
from stream_dedup.runtime.run import open_decider
from stream_dedup.runtime.service import Service
from stream_dedup.tools.broker import LocalBroker
from stream_dedup.tools.demo import service_env

TTL_S = 24 * 3600
# A broker started moments ago is slower than one that has run a while, and a run without
# --bootstrap starts one: its JVM still compiles its hot paths during the first passes, which
# then cost more CPU and show a higher p99. A broker in production has run for days; the figures
# are of that one. Each warm-up pass's figures are printed, none counted.
WARM_BROKER_PASSES = 4
# Phase 1's records: over 20 s of input at the ~30k msgs/s the service sustains here, so that
# its start and its last commit are a small part of what is timed.
SUSTAINED_RECORDS = 700_000


def topic_settings(bootstrap: str, name: str) -> KafkaSettings:
    return KafkaSettings(bootstrap_servers=bootstrap, input_topics=(f"{name}-input",),
                         output_topic=f"{name}-unique", duplicates_topic=f"{name}-duplicates",
                         dead_letter_topic=f"{name}-dead", group_id=f"{name}-group")


def sustained_topics(bootstrap: str, name: str) -> KafkaSettings:
    """Phase 1's topics, its input of 6 partitions."""
    return dataclasses.replace(topic_settings(bootstrap, f"{name}-a"), partitions=6)


def load(path: Path) -> list[bytes]:
    with gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb") as f:
        return [line.rstrip(b"\n") for line in f if line.strip()]


def preload(k: KafkaSettings, lines: list[bytes]) -> None:
    producer = new_producer(k.bootstrap_servers)
    try:
        send_lines(producer, k.input_topics[0], lines, "id")
    finally:
        producer.close()


def host(settings: Settings, lines: list[bytes]) -> dict[str, float]:
    """Phase 4: how fast this host runs the engine alone and `json.loads` right now."""
    loads = bench_results.json_loads_per_s(lines)
    decoded = (decode(line, "bench", str(n), n, settings.input) for n, line in enumerate(lines))
    messages = [m for m in decoded if not isinstance(m, DeadLetter)]
    with tempfile.TemporaryDirectory(prefix="kafka-bench-engine-") as state:
        engine = open_engine(settings, state)
        try:
            started = time.perf_counter()
            size = settings.kafka.poll_batch_size
            for start in range(0, len(messages), size):
                engine.process(messages[start:start + size])
            alone = time.perf_counter() - started
        finally:
            engine.close()
    figures = {"engine_msgs_per_s": len(messages) / alone, "json_loads_per_s": loads}
    print(f"\n[4] this host now: the engine alone (no Kafka, one process, batches of {size:,}) "
          f"{figures['engine_msgs_per_s']:,.0f} msgs/s (about what [1] could reach were Kafka "
          f"free); json.loads {figures['json_loads_per_s']:,.0f} records/s")
    return figures


class Timed:
    """The source, noting the first poll that returned records and the last commit, and
    asking the service to stop once it polled all `total` records of the topic (the service
    then completes its last batch: acknowledged and committed). Asking the broker for the
    group's lag instead, from a thread of this process every 0.2 s, took ~10% of the phase's
    CPU (an admin client and a consumer made for each question)."""

    def __init__(self, source: KafkaSource, total: int, shutdown: Shutdown) -> None:
        self.source = source
        self.total = total
        self.shutdown = shutdown
        self.polled = 0
        self.first: float | None = None
        self.last = 0.0

    def poll(self, wait: bool = True):  # -> list[InputRecord]
        records = self.source.poll(wait)
        if records and self.first is None:
            self.first = time.perf_counter()
        self.polled += len(records)
        if self.polled >= self.total:
            self.shutdown.request()
        return records

    def commit(self, offsets: dict[tuple[str, int], int]) -> bool:
        ok = self.source.commit(offsets)
        self.last = time.perf_counter()
        return ok

    def transaction_group(self, offsets: dict[tuple[str, int], int]):  # -> group metadata
        return self.source.transaction_group(offsets)

    def rewind(self, offsets: dict[tuple[str, int], int]) -> None:
        self.source.rewind(offsets)

    def lags(self) -> dict[tuple[str, int], int]:
        return self.source.lags()

    def before_revoke(self, settle: Callable[[], None]) -> None:
        self.source.before_revoke(settle)

    def topics(self) -> set[str]:
        return self.source.topics()

    def close(self) -> None:
        self.source.close()


class TimedTransactions(TransactionalSink):
    """The transactional sink, noting the end of each commit (the offsets' commit under
    exactly_once) as `Timed.last`."""

    timed: Timed

    def commit(self, sent, offsets: dict[tuple[str, int], int], group) -> None:
        super().commit(sent, offsets, group)
        self.timed.last = time.perf_counter()


def throughput(settings: Settings, lines: list[bytes], profile: bool) -> dict[str, float]:
    """Phase 1: the preloaded stream through the in-process service."""
    k = settings.kafka
    shutdown = Shutdown(k.shutdown_timeout_s)
    backoff = Backoff(k.retry_backoff_s, k.retry_backoff_max_s, shutdown.expired)
    state = tempfile.mkdtemp(prefix="kafka-bench-state-")
    engine, _ = open_decider(settings, state, backoff)  # as `stream-dedup run` decides
    source = Timed(KafkaSource(k, backoff), len(lines), shutdown)
    if k.guarantee == "exactly_once":
        sink = TimedTransactions(k, backoff, transactional_id(k, state))
        sink.timed = source
    else:
        sink = KafkaSink(k, backoff)
    service = Service(settings, engine, source, sink, shutdown)
    service.check_topics()  # as `stream-dedup run` does before its first poll

    profiler = cProfile.Profile() if profile else None
    if profiler:
        profiler.enable()
    stats = service.run()  # closes the engine, and so the state
    shutil.rmtree(state, ignore_errors=True)
    if profiler:
        profiler.disable()
        print_profile(profiler)
    elapsed = source.last - (source.first or source.last)
    busy = sum(stats.seconds.values())
    print(f"\n[1] sustained, {k.guarantee}: {stats.records:,} records in {elapsed:.2f} s from "
          f"first poll to last commit = {stats.records / elapsed:,.0f} msgs/s "
          f"({stats.batches:,} batches, mean {stats.records / max(stats.batches, 1):,.0f} a batch)")
    print("    time by loop step: " + ", ".join(
        f"{name} {sec:.2f} s ({sec / busy:.0%}, {stats.records / max(sec, 1e-9):,.0f} msgs/s)"
        for name, sec in stats.seconds.items()))
    return {"msgs_per_s": stats.records / elapsed, **{f"{n}_s": v for n, v in
                                                      stats.seconds.items()}}


def print_profile(profiler: cProfile.Profile) -> None:
    """Own time by package, then the costliest functions."""
    st = pstats.Stats(profiler)
    by_package: dict[str, float] = defaultdict(float)
    for (filename, _, _), (_, _, tottime, _, _) in st.stats.items():  # type: ignore[attr-defined]
        parts = Path(filename).parts
        name = next((p for p in ("stream_dedup", "kafka", "rocksdict", "numpy", "opencc",
                                 "selectors", "threading", "json") if p in parts
                     or filename.endswith(f"{p}.py")), "other (builtins, C calls)")
        by_package[name] += tottime
    total = sum(by_package.values())
    print("\nprofile of phase 1 (own time by package; the kafka I/O thread runs beside it):")
    for name, sec in sorted(by_package.items(), key=lambda kv: -kv[1]):
        print(f"    {name:<28}{sec:6.2f} s  {sec / total:5.1%}")
    st.sort_stats("tottime").print_stats(15)


class Readers:
    """Reads the output, duplicates and dead-letter topics from their beginning and notes, for
    every record, its input timestamp and (arrival here - that timestamp) in ms.

    kcat (librdkafka, C) by default: one `kcat -C` per topic, its records' timestamps read from
    its stdout by a thread each. With `python=True`, one kafka-python consumer polled in `run`.
    `committed`: read with isolation.level=read_committed (a record arrives when its transaction
    commits, as for the consumers of a service under exactly_once).
    """

    def __init__(self, bootstrap: str, topics: list[str], python: bool,
                 committed: bool = False) -> None:
        self.sent_at: list[int] = []
        self.lat: list[float] = []
        self.first = self.last = 0.0
        self._lock = threading.Lock()
        self._procs: list[subprocess.Popen] = []
        self._consumer: KafkaConsumer | None = None
        if python:
            # A fetch is answered as soon as one byte is there (fetch_min_bytes 1), so a longer
            # wait when nothing is (100 ms) delays no record and spares the cores empty fetches.
            self._consumer = KafkaConsumer(
                bootstrap_servers=bootstrap, group_id=None, fetch_max_wait_ms=100,
                fetch_min_bytes=1, enable_auto_commit=False,
                isolation_level="read_committed" if committed else "read_uncommitted")
            tps = [TopicPartition(t, p) for t in topics
                   for p in self._consumer.partitions_for_topic(t)]
            self._consumer.assign(tps)
            self._consumer.seek_to_beginning(*tps)
            return
        for topic in topics:
            isolation = "read_committed" if committed else "read_uncommitted"
            proc = subprocess.Popen(["kcat", "-C", "-b", bootstrap, "-t", topic, "-o", "beginning",
                                     "-u", "-q", "-X", f"isolation.level={isolation}",
                                     "-f", "%T\n"], stdout=subprocess.PIPE)
            self._procs.append(proc)
            threading.Thread(target=self._follow, args=(proc,), daemon=True).start()
        time.sleep(1.0)  # their metadata and first fetches, before the feeder starts

    def _follow(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            now_ms = time.time() * 1000
            self._note([int(line)], now_ms)

    def _note(self, stamps: list[int], now_ms: float) -> None:
        with self._lock:
            self.sent_at.extend(stamps)
            self.lat.extend(now_ms - t for t in stamps)
            self.last = time.perf_counter()
            self.first = self.first or self.last

    def run(self, n: int, deadline: float) -> None:
        """Until `n` records were read or the deadline passed."""
        while len(self.lat) < n and time.monotonic() < deadline:
            if self._consumer is None:
                time.sleep(0.05)
                continue
            for batch in self._consumer.poll(timeout_ms=50).values():
                self._note([r.timestamp for r in batch], time.time() * 1000)

    def pids(self) -> list[int]:
        return [p.pid for p in self._procs] or [os.getpid()]

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
        for proc in self._procs:
            proc.terminate()
            proc.wait(10)


def latency(settings: Settings, lines: list[bytes], rate: float, seconds: float,
            warmup: float, python_clients: bool) -> dict[str, float]:
    """Phase 2: produce at `rate` into the service (a subprocess) for `warmup` + `seconds`;
    read every output here; the figures are those of the input after the warm-up."""
    k = settings.kafka
    n = min(len(lines), int(rate * (warmup + seconds)))
    work = Path(tempfile.mkdtemp(prefix="kafka-bench-latency-"))
    log = work / "service.log"
    # No metrics port (other runs on this machine may hold the default); metrics still counted.
    env = {**service_env(k, work / "state"), "STREAM_DEDUP__METRICS__PORT": "0",
           "STREAM_DEDUP__KAFKA__GUARANTEE": k.guarantee}
    with open(log, "wb") as out:
        service = subprocess.Popen([sys.executable, "-m", "stream_dedup.cli", "run"],
                                   env=env, stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + 60
        while "partitions assigned" not in log.read_text(errors="replace"):
            assert service.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        readers = Readers(k.bootstrap_servers, configured_topics(k)[1:], python_clients,
                          committed=k.guarantee == "exactly_once")
        feeder = multiprocessing.get_context("spawn").Process(
            target=feed, args=(k.bootstrap_servers, k.input_topics[0], lines[:n], rate,
                               python_clients))
        feeder.start()
        pids = {"service": [service.pid], "feeder": [feeder.pid], "readers": readers.pids()}
        machine = cpu_seconds()
        used = {name: sum(cpu_seconds(p)[0] for p in ps) for name, ps in pids.items()}
        readers.run(n, time.monotonic() + warmup + seconds + 60)
        machine = [b - a for a, b in zip(machine, cpu_seconds(), strict=True)]
        used = {name: sum(cpu_seconds(p)[0] for p in pids[name]) - before
                for name, before in used.items()}
        feeder.join(30)
        readers.close()
    finally:
        service.send_signal(signal.SIGTERM)
        service.wait(60)
    lat, sent_at = readers.lat, readers.sent_at
    got = len(lat)
    # The warm-up's records are left out of the figures and shown beside them, never dropped.
    cut = min(sent_at) + warmup * 1000
    measured = sorted(v for t, v in zip(sent_at, lat, strict=True) if t >= cut)
    warming = sorted(v for t, v in zip(sent_at, lat, strict=True) if t < cut) or [0.0]
    if not measured:
        raise SystemExit(f"no record was sent after the {warmup:g} s warm-up: lower --warmup or "
                         "--rate, or give a longer --input")
    lat.sort()
    clients = "kafka-python" if python_clients else "kcat"
    print(f"\n[2] latency, {k.guarantee}, at an offered {rate:,.0f} msgs/s ({clients} feeder "
          "and readers): "
          f"{got:,}/{n:,} records out in {readers.last - readers.first:.1f} s "
          f"({got / max(readers.last - readers.first, 1e-9):,.0f} msgs/s); input timestamp to "
          f"output, the {len(measured):,} records after a {warmup:g} s warm-up: p50 "
          f"{pick(measured, 0.50):.0f} ms, p99 {pick(measured, 0.99):.0f} ms, max "
          f"{measured[-1]:.0f} ms (the warm-up: p99 {pick(warming, 0.99):.0f} ms, max "
          f"{warming[-1]:.0f} ms; all records: p99 {pick(lat, 0.99):.0f} ms)")
    print(f"    the service: {stopped_line(log)}")
    shutil.rmtree(work, ignore_errors=True)  # the service's state and log (read above)
    cores = {name: seconds / machine[1] for name, seconds in used.items()}
    print(f"    CPU meanwhile (cores): the machine {machine[0] / machine[1]:.2f} of "
          f"{os.cpu_count()} busy; the service {cores['service']:.2f}, the feeder "
          f"{cores['feeder']:.2f}, the readers {cores['readers']:.2f}, the broker and anything "
          f"else running {machine[0] / machine[1] - sum(cores.values()):.2f}")
    return {"offered": rate, "received": got, "p50_ms": pick(measured, 0.5),
            "p99_ms": pick(measured, 0.99), "max_ms": measured[-1],
            "warmup_p99_ms": pick(warming, 0.99), "all_p99_ms": pick(lat, 0.99)}


def cpu_seconds(pid: int | None = None) -> list[float]:
    """[busy CPU seconds, wall seconds] of the machine (all cores, from /proc/stat), or of
    process `pid` (user + system, its children that it waited for included: the feeder's kcat)."""
    tick = os.sysconf("SC_CLK_TCK")
    if pid is None:
        v = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return [(sum(v) - v[3] - v[4]) / tick, time.monotonic()]
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return [sum(int(x) for x in f[11:15]) / tick, time.monotonic()]


def feed(bootstrap: str, topic: str, lines: list[bytes], rate: float, python: bool) -> None:
    """Phase 2's input, in a process of its own, keyed by the id field, paced to `rate` records
    a second. `kcat -P` by default: it starts (metadata, connections) for a second before the
    pacing clock starts and stamps each record when it reads its line. With `python`: what
    `stream-dedup produce --rate` does, its producer told where the topic lives first."""
    if python:
        producer = new_producer(bootstrap)
        try:
            producer.partitions_for(topic)
            send_lines(producer, topic, lines, "id", rate)
        finally:
            producer.close()
        return
    kcat = subprocess.Popen(["kcat", "-P", "-b", bootstrap, "-t", topic, "-K", "\t", "-q",
                             "-X", "linger.ms=5"], stdin=subprocess.PIPE)
    assert kcat.stdin is not None
    time.sleep(1.0)
    started = time.perf_counter()
    for n, line in enumerate(lines):
        ahead = started + n / rate - time.perf_counter()
        if ahead > 0.001:
            time.sleep(ahead)
        kcat.stdin.write(str(json.loads(line)["id"]).encode() + b"\t" + line + b"\n")
        kcat.stdin.flush()
    kcat.stdin.close()
    if kcat.wait(60):
        raise RuntimeError(f"kcat -P exited with {kcat.returncode}")


def delete_topics(bootstrap: str, tag: str) -> None:
    """Delete every topic whose name holds this run's `tag`."""
    with admin(bootstrap) as client:
        mine = [t for t in client.list_topics() if tag in t]
        if mine:
            client.delete_topics(mine)
    print(f"deleted this run's {len(mine)} topics", file=sys.stderr)


def pick(ordered: list[float], q: float) -> float:
    """The `q` quantile of an ascending list (nearest rank)."""
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)]


def stopped_line(log: Path) -> str:
    """Batches, mean batch size and the time by loop step, from the service's last log line."""
    fields = dict(re.findall(r"(\w+)=(\S+)", next(
        (line for line in reversed(log.read_text(errors="replace").splitlines())
         if " stopped records=" in line), "")))
    if not fields:
        return f"no 'stopped' line in {log}"
    records, batches = int(fields["records"]), max(int(fields["batches"]), 1)
    steps = ", ".join(f"{name} {float(fields[f'{name}_s']):.1f} s" for name in STEPS)
    return (f"{records:,} records in {batches:,} batches (mean {records / batches:.0f} a "
            f"batch); time by loop step: {steps}")


def quix(k: KafkaSettings, total: int) -> dict[str, float]:
    """Phase 3: Quix Streams' TTL dedup recipe on the same input topic."""
    from datetime import timedelta

    from quixstreams import Application

    ttl = timedelta(seconds=TTL_S)
    state_dir = tempfile.mkdtemp(prefix="kafka-bench-quix-")
    app = Application(broker_address=k.bootstrap_servers,
                      consumer_group=f"quix-{uuid.uuid4().hex[:8]}", auto_offset_reset="earliest",
                      state_dir=state_dir, loglevel="WARNING")
    marks = {"seen": 0, "kept": 0, "first": 0.0, "last": 0.0}

    def dedup(value, key, timestamp, headers, state) -> bool:
        marks["seen"] += 1
        marks["first"] = marks["first"] or time.perf_counter()
        if marks["seen"] >= total:
            marks["last"] = time.perf_counter()
            app.stop()
        if state.get("seen"):
            return False  # the same text within the TTL: drop
        state.set("seen", True, ttl=ttl)
        marks["kept"] += 1
        return True

    sdf = app.dataframe(app.topic(k.input_topics[0], value_deserializer="json"))
    sdf = sdf.group_by(lambda value: value["text"], name="by_text")
    sdf = sdf.filter(dedup, stateful=True, metadata=True)
    sdf.to_topic(app.topic(f"{k.input_topics[0]}-quix-out", value_serializer="json"))
    app.run()
    shutil.rmtree(state_dir, ignore_errors=True)
    elapsed = marks["last"] - marks["first"]
    print(f"\n[3] Quix Streams exact dedup (group_by text + stateful filter, TTL {TTL_S} s): "
          f"{marks['seen']:,} records, {marks['kept']:,} kept, in {elapsed:.2f} s = "
          f"{marks['seen'] / max(elapsed, 1e-9):,.0f} msgs/s")
    return {"msgs_per_s": marks["seen"] / max(elapsed, 1e-9), "kept": marks["kept"]}


def phases(bootstrap: str, name: str, sustained: list[bytes], lines: list[bytes],
           args: argparse.Namespace, engine: EngineSettings, profile: bool,
           anchor: bool) -> dict[str, dict[str, float]]:
    """Phases 1 (on `sustained`) and 2 (on `lines`) for each guarantee, on topics of their own
    named after `name`; keys "throughput" and "latency" for at_least_once, with "_exactly_once"
    after them for it. Phase 1 runs `--rounds` times, the guarantees taking turns, and its
    figures are the median round's: a neighbour's load on a shared host moves single runs by a
    third. With `anchor`, Quix Streams (phase 3) reads each round's at_least_once input right
    after the service did: "quix" holds its median round and "vs_quix" the ratio of the two
    rounds by round (min, median, max)."""
    results: dict[str, dict[str, float]] = {}
    rounds: dict[str, list[dict[str, float]]] = {g: [] for g in args.guarantee}
    quixes: list[dict[str, float]] = []
    ratios: list[float] = []
    for r in range(args.rounds):
        for guarantee in args.guarantee:
            named = f"{name}-e" if guarantee == "exactly_once" else name
            k1 = dataclasses.replace(
                sustained_topics(bootstrap, f"{named}-r{r}" if r else named), guarantee=guarantee)
            create_topics(k1)
            preload(k1, sustained)
            rounds[guarantee].append(throughput(Settings(kafka=k1, engine=engine), sustained,
                                                profile and r == 0))
            if anchor and guarantee == "at_least_once":
                quixes.append(quix(k1, len(sustained)))
                ratios.append(rounds[guarantee][-1]["msgs_per_s"] / quixes[-1]["msgs_per_s"])
    if ratios:
        ratios.sort()
        results["quix"] = sorted(quixes, key=lambda f: f["msgs_per_s"])[len(quixes) // 2]
        results["vs_quix"] = {"min": ratios[0], "median": ratios[len(ratios) // 2],
                              "max": ratios[-1], "rounds": len(ratios)}
        print(f"\nstream-dedup (near + exact dedup) / Quix Streams (exact dedup of raw text), "
              f"sustained, {len(ratios)} rounds each on the same input: min {ratios[0]:.2f}x, "
              f"median {ratios[len(ratios) // 2]:.2f}x, max {ratios[-1]:.2f}x")
    for guarantee, figures in rounds.items():
        suffix = "_exactly_once" if guarantee == "exactly_once" else ""
        ordered = sorted(figures, key=lambda f: f["msgs_per_s"])
        results[f"throughput{suffix}"] = {**ordered[len(ordered) // 2], "rounds": len(ordered)}
        each = ", ".join(f"{f['msgs_per_s']:,.0f}" for f in figures)
        print(f"\n[1] sustained, {guarantee}, median of {len(ordered)} rounds: "
              f"{ordered[len(ordered) // 2]['msgs_per_s']:,.0f} msgs/s (rounds: {each})")
    for guarantee in args.guarantee if args.seconds > 0 else ():
        eos = guarantee == "exactly_once"
        suffix, named = ("_exactly_once", f"{name}-e") if eos else ("", name)
        k2 = dataclasses.replace(topic_settings(bootstrap, f"{named}-b"), guarantee=guarantee)
        create_topics(k2, partitions=6)
        results[f"latency{suffix}"] = latency(Settings(kafka=k2), lines, args.rate,
                                              args.seconds, args.warmup, args.python_clients)
    if {"throughput", "throughput_exactly_once"} <= results.keys():
        share = (results["throughput_exactly_once"]["msgs_per_s"]
                 / results["throughput"]["msgs_per_s"])
        results["exactly_once_cost"] = {"sustained_share": share}
        print(f"\nexactly_once sustained {share:.2f}x of at_least_once's (medians)")
    return results


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap", default=os.environ.get("STREAM_DEDUP_KAFKA_BOOTSTRAP"))
    p.add_argument("--input", type=Path, default=bench_results.dev_stream())
    p.add_argument("--rate", type=float, default=2000.0, help="offered rate of phase 2")
    p.add_argument("--seconds", type=float, default=12.0,
                   help="length of phase 2 after its warm-up (0 skips the phase)")
    p.add_argument("--warmup", type=float, default=2.0,
                   help="seconds of phase 2's input before the measured ones")
    p.add_argument("--warm-broker", type=int, metavar="PASSES",
                   help="passes of phases 1 and 2 on topics of their own before the measured "
                        f"ones, not counted (default: {WARM_BROKER_PASSES} when this run starts "
                        "the broker, 0 with --bootstrap)")
    p.add_argument("--profile", action="store_true", help="cProfile phase 1")
    p.add_argument("--no-quix", action="store_true", help="skip the Quix Streams anchor")
    p.add_argument("--python-clients", action="store_true",
                   help="phase 2 feeds and reads with kafka-python instead of kcat")
    p.add_argument("--engine-process", choices=("child", "inline"),
                   default=Settings().engine.process,
                   help="where the service runs its engine (`engine.process`), both phases")
    p.add_argument("--rounds", type=int, default=5,
                   help="phase 1 runs this many times, the guarantees taking turns, each "
                        "at_least_once round followed by Quix Streams on its input; its "
                        "figures are the median round's (default 5)")
    p.add_argument("--records", type=int, default=SUSTAINED_RECORDS,
                   help="phase 1's input: the stream repeated with fresh ids and each round's "
                        "characters shifted, up to this many records (default "
                        f"{SUSTAINED_RECORDS:,})")
    p.add_argument("--guarantee", type=lambda v: v.split(","),
                   default=["at_least_once", "exactly_once"],
                   help="the kafka.guarantee values to run phases 1 and 2 with, in order "
                        "(comma-separated; default both)")
    args = p.parse_args(argv)
    bad = set(args.guarantee) - {"at_least_once", "exactly_once"}
    if bad:
        p.error(f"--guarantee: {', '.join(sorted(bad))} (allowed: at_least_once, exactly_once)")
    engine = dataclasses.replace(Settings().engine, process=args.engine_process)
    os.environ["STREAM_DEDUP__ENGINE__PROCESS"] = args.engine_process  # phase 2's `run`
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    quiet_kafka_logs()
    lines = load(args.input)
    sustained = bench_results.repeated(lines, args.records)
    print(f"stream: {args.input.name}, {len(lines):,} records (phase 1: {len(sustained):,}, "
          f"repeated with fresh ids); {os.cpu_count()} cores shared by the broker, the service "
          "and the clients")
    with ExitStack() as stack:
        bootstrap = args.bootstrap or stack.enter_context(LocalBroker(39092)).bootstrap
        tag = uuid.uuid4().hex[:6]
        stack.callback(delete_topics, bootstrap, tag)
        passes = args.warm_broker if args.warm_broker is not None else (
            0 if args.bootstrap else WARM_BROKER_PASSES)
        name = f"bench-{tag}"
        for i in range(1, passes + 1):
            with redirect_stdout(io.StringIO()):
                warm = phases(bootstrap, f"{name}-w{i}", lines, lines, args, engine,
                              profile=False, anchor=False)
            said = ", ".join(f"{key} {fig['msgs_per_s']:,.0f} msgs/s" if "msgs_per_s" in fig
                             else f"{key} p99 {fig['p99_ms']:.0f} ms"
                             for key, fig in warm.items() if "p99_ms" in fig or "msgs_per_s" in fig)
            print(f"[0] broker warm-up pass {i} of {passes}, not counted: {said}", flush=True)
        results = phases(bootstrap, name, sustained, lines, args, engine, args.profile,
                         anchor=not args.no_quix)
    results["host"] = host(Settings(), lines)
    figures = {k: {n: round(v, 2) for n, v in r.items()} for k, r in results.items()}
    print(json.dumps(figures))
    bench_results.write("kafka", f"{args.input.name}, {len(lines):,} records (phase 1: "
                        f"{len(sustained):,}); broker, service "
                        f"and clients on this host's {os.cpu_count()} cores; phase 2 offered "
                        f"{args.rate:,.0f} msgs/s for {args.seconds:g} s after a "
                        f"{args.warmup:g} s warm-up.\n\n" + bench_results.nested_table(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
