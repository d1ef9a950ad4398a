"""Helpers of the service's integration tests: streams, running the service, reading topics."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from dev_stream import dev_stream_path
from kafka import KafkaConsumer, TopicPartition

from stream_dedup.config import KafkaSettings, Settings
from stream_dedup.decode import decode
from stream_dedup.engine.batch import Engine
from stream_dedup.engine.stored import TABLES
from stream_dedup.kafka.produce import new_producer, send_lines
from stream_dedup.kafka.retry import Backoff, Shutdown
from stream_dedup.kafka.sink import KafkaSink
from stream_dedup.kafka.source import KafkaSource
from stream_dedup.kafka.topics import LagWatch
from stream_dedup.records import Message, Verdict
from stream_dedup.runtime.service import Service
from stream_dedup.state import MemoryStore, open_store

REPO = Path(__file__).resolve().parents[2]


def stream_lines(limit: int | None = None) -> tuple[str, list[bytes]]:
    """(name, lines) of the dev stream (tests/dev_stream.py), repeated with fresh ids until
    `limit` lines."""
    path = dev_stream_path()
    with gzip.open(path, "rb") as f:
        base = [line.rstrip(b"\n") for line in f if line.strip()]
    lines = list(base)
    rounds = 1
    while limit is not None and len(lines) < limit:
        for raw in base:
            obj = json.loads(raw)
            obj["id"] = f"{obj['id']}-r{rounds}"
            obj["text"] = f"{obj['text']}（第{rounds}轮）"
            lines.append(json.dumps(obj, ensure_ascii=False).encode())
        rounds += 1
    return path.name, lines[:limit] if limit else lines


def free_port() -> int:
    """A port nothing listens on now (for a service's metrics port)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def id_of(raw: bytes) -> str:
    return str(json.loads(raw)["id"])


def service_settings(bootstrap: str, topics: dict[str, str], group: str, **kafka: object
                  ) -> Settings:
    """Default settings pointed at one test's topics and group, with short timeouts."""
    k = KafkaSettings(bootstrap_servers=bootstrap, input_topics=(topics["input"],),
                      output_topic=topics["output"], duplicates_topic=topics["duplicates"],
                      dead_letter_topic=topics["dead"], group_id=group,
                      session_timeout_ms=6000, retry_backoff_max_s=2.0, shutdown_timeout_s=20.0)
    return dataclasses.replace(Settings(), kafka=dataclasses.replace(k, **kafka))


def make_topics(unique_topic: Callable[..., str], input_partitions: int) -> dict[str, str]:
    return {"input": unique_topic(partitions=input_partitions, prefix="in"),
            "output": unique_topic(partitions=3, prefix="unique"),
            "duplicates": unique_topic(partitions=3, prefix="dups"),
            "dead": unique_topic(partitions=1, prefix="dead")}


def produce(bootstrap: str | KafkaSettings, topic: str, lines: Sequence[bytes], rate: float | None = None
            ) -> None:
    producer = new_producer(bootstrap)
    try:
        send_lines(producer, topic, lines, "id", rate)
    finally:
        producer.close()


def read_topic(bootstrap: str, topic: str, timeout_s: float = 60.0) -> list:
    """Every record of `topic` from the beginning to the end offsets seen at the start."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                             enable_auto_commit=False, fetch_max_wait_ms=50)
    try:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        records: list = []
        deadline = time.monotonic() + timeout_s
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, f"reading {topic} timed out"
            for batch in consumer.poll(timeout_ms=200).values():
                records.extend(batch)
        return records
    finally:
        consumer.close()


def wait_drained(settings: Settings, timeout_s: float, alive: Callable[[], bool] = lambda: True
                 ) -> None:
    """Until the group has committed every input record."""
    k = settings.kafka
    deadline = time.monotonic() + timeout_s
    with LagWatch(k.bootstrap_servers, k.group_id, k.input_topics) as watch:
        while watch.lag() > 0:
            assert alive(), "the service stopped before it had read everything"
            assert time.monotonic() < deadline, f"input not drained within {timeout_s} s"
            time.sleep(0.3)


class Recording:
    """The engine, recording the order in which the service gave it the messages."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.order: list[Message] = []

    def process(self, messages: Sequence[Message]) -> list[Verdict]:
        self.order.extend(messages)
        return self.engine.process(messages)

    def close(self) -> None:
        self.engine.close()


class ThreadedService:
    """The service in a background thread of the test process (signals are the CLI's job)."""

    def __init__(self, settings: Settings, state: Path) -> None:
        k = settings.kafka
        self.shutdown = Shutdown(k.shutdown_timeout_s)
        backoff = Backoff(k.retry_backoff_s, k.retry_backoff_max_s, self.shutdown.expired)
        st = settings.state
        self.engine = Recording(Engine(settings, open_store(st.backend, str(state), TABLES)))
        self.service = Service(settings, self.engine, KafkaSource(k, backoff),
                               KafkaSink(k, backoff), self.shutdown)
        self.service.check_topics()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.service.run()
        except BaseException as exc:
            self.error = exc

    def stop(self, timeout_s: float = 60.0) -> None:
        self.shutdown.request()
        self.thread.join(timeout_s)
        assert not self.thread.is_alive(), "the service did not stop"
        assert self.error is None, f"the service failed: {self.error!r}"


def file_mode_uniques(settings: Settings, messages: Sequence[Message]) -> set[str]:
    """Ids the engine calls unique when it reads `messages` in this order (file mode)."""
    engine = Engine(settings, MemoryStore(TABLES))
    unique: set[str] = set()
    size = settings.engine.batch_size
    for i in range(0, len(messages), size):
        for v in engine.process(messages[i:i + size]):
            if not v.is_duplicate:
                unique.add(v.id)
    return unique


def service_env(settings: Settings, state: Path, metrics_port: int = 0) -> dict[str, str]:
    """Environment that points `stream-dedup run` (a subprocess) at these settings; the metrics
    port is off unless one is given (tests running at once would all want the default 9108)."""
    k = settings.kafka
    env = {**os.environ, "STREAM_DEDUP__STATE__PATH": str(state),
           "STREAM_DEDUP__METRICS__PORT": str(metrics_port)}
    env["STREAM_DEDUP__ENGINE__PROCESS"] = settings.engine.process
    for f in dataclasses.fields(k):
        value = getattr(k, f.name)
        env[f"STREAM_DEDUP__KAFKA__{f.name.upper()}"] = (
            json.dumps(list(value)) if isinstance(value, tuple)
            else "null" if value is None else str(value))
    return env


# Where each started service's lines begin in its (appended) log, by pid.
_LOG_START: dict[int, int] = {}


def start_service(settings: Settings, state: Path, log: Path, metrics_port: int = 0,
                  log_format: str = "human", script: str | None = None,
                  env: dict[str, str] | None = None) -> subprocess.Popen:
    """`stream-dedup run` as a child process, its log appended to `log`; or `script` (Python
    source that runs it), with `env` added to its environment."""
    out = open(log, "ab")  # noqa: SIM115 (inherited by the child; closed with the test)
    start = out.tell()  # the end of what earlier processes wrote
    argv = (["-c", script] if script is not None
            else ["-m", "stream_dedup.cli", "--log-format", log_format, "run"])
    proc = subprocess.Popen([sys.executable, *argv], stdout=out, stderr=out,
                            env={**service_env(settings, state, metrics_port), **(env or {})})
    _LOG_START[proc.pid] = start
    return proc



def stop_service(proc: subprocess.Popen, log: Path, timeout_s: float = 60.0) -> None:
    """SIGTERM, and the service must exit 0 within `timeout_s`. The signal waits until this
    process says it is running (a line of its own, not one of an earlier process appending to
    the same log): before its handlers are installed (imports, a cold start on a busy machine)
    SIGTERM ends the process the default way, which proves nothing."""
    deadline = time.monotonic() + timeout_s
    start = _LOG_START.pop(proc.pid, 0)
    while (proc.poll() is None and time.monotonic() < deadline
           and b"running state=" not in log.read_bytes()[start:]):
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"the service did not stop within {timeout_s:.0f} s of SIGTERM"
                             ) from None
    assert code == 0, f"exit {code}:\n{log.read_text(errors='replace')[-3000:]}"


def wait_lag_below(settings, threshold: int, proc: subprocess.Popen, timeout_s: float) -> None:
    """Wait until the group's lag is below `threshold`, asking every 20 ms on the same clients
    (made for each question, they took ~0.2 s, during which the service decides thousands of
    records)."""
    k = settings.kafka
    deadline = time.monotonic() + timeout_s
    with LagWatch(k.bootstrap_servers, k.group_id, k.input_topics) as watch:
        while (lag := watch.lag()) >= threshold:
            assert proc.poll() is None, f"service exited with {proc.returncode}"
            assert time.monotonic() < deadline, f"lag stayed at {lag} (waiting for < {threshold})"
            time.sleep(0.02)


def check_nothing_lost(settings, topics, lines) -> tuple[int, int]:
    """Every input id in an output topic; file mode's uniques all in the output topic. Returns
    (records emitted twice or more, distinct ids emitted)."""
    bootstrap = settings.kafka.bootstrap_servers
    unique = read_topic(bootstrap, topics["output"])
    dups = read_topic(bootstrap, topics["duplicates"])
    dead = read_topic(bootstrap, topics["dead"])
    assert not dead
    emitted = Counter(id_of(r.value) for r in unique + dups)
    ids = [id_of(raw) for raw in lines]
    missing = set(ids) - set(emitted)
    assert not missing, f"{len(missing)} input ids lost, e.g. {sorted(missing)[:5]}"
    messages = [decode(raw, "t", str(n), 0, settings.input) for n, raw in enumerate(lines)]
    expected = file_mode_uniques(settings, messages)
    out_ids = {id_of(r.value) for r in unique}
    assert expected <= out_ids, f"{len(expected - out_ids)} file-mode uniques missing"
    assert out_ids <= expected, f"{len(out_ids - expected)} outputs file mode calls duplicates"
    twice = sum(n - 1 for n in emitted.values() if n > 1)
    return twice, len(emitted)
