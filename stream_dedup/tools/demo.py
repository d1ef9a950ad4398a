"""`stream-dedup demo`: the whole streaming job on this machine in one command.

Starts the repository's broker on free ports (installing Java and Maven when missing), creates
fresh topics, starts the service as a subprocess (`stream-dedup run`, so it is the same program
an operator runs), feeds the input file through it, waits until the service has committed every
input record, reads the counts back from the broker, and stops and removes what it started: the
broker's data, the state and the logs live in one temporary directory. Ports are claimed
(`ports.PortClaims`) so that two demos on one host never collide.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from kafka.errors import KafkaError

from ..config import KafkaSettings, Settings
from ..errors import ServiceError
from ..kafka.produce import produce_file
from ..kafka.topics import LagWatch, admin, configured_topics, create_topics, record_counts
from ..runtime.lifecycle import metrics_url
from .broker import LocalBroker
from .ports import PortClaims

log = logging.getLogger(__name__)
SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample.jsonl.gz"
DEFAULT_PORT = 29092
STOP_GRACE_S = 15.0


def default_input() -> Path:
    """The sample stream the package ships (a few thousand labelled reviews)."""
    return SAMPLE


@dataclass(frozen=True, slots=True)
class Summary:
    """What went through, counted on the broker (end offsets of fresh topics)."""

    records_in: int
    out: int
    duplicates: int
    dead_letters: int
    seconds: float  # first record sent to last offset committed; the broker's start excluded

    @property
    def msgs_per_s(self) -> float:
        return self.records_in / max(self.seconds, 1e-9)

    @property
    def dedup_rate(self) -> float:
        return self.duplicates / max(self.records_in - self.dead_letters, 1)

    def as_json(self) -> dict[str, float | int]:
        return {"in": self.records_in, "out": self.out, "duplicates": self.duplicates,
                "dead_letters": self.dead_letters, "msgs_per_s": round(self.msgs_per_s, 1),
                "dedup_rate": round(self.dedup_rate, 4), "seconds": round(self.seconds, 2)}


def demo_settings(kafka: KafkaSettings, bootstrap: str, tag: str) -> KafkaSettings:
    """Fresh topic and group names for one demo run, so counts start from zero."""
    return dataclasses.replace(
        kafka, bootstrap_servers=bootstrap, input_topics=(f"demo-{tag}-input",),
        output_topic=f"demo-{tag}-unique", duplicates_topic=f"demo-{tag}-duplicates",
        dead_letter_topic=f"demo-{tag}-dead-letters", group_id=f"demo-{tag}",
        **PLAINTEXT)


# The demo's local broker is PLAINTEXT whatever config.yaml says about the real cluster.
PLAINTEXT = {"security_protocol": "PLAINTEXT", "sasl_username": None, "sasl_password_env": None,
             "sasl_password_file": None, "ssl_cafile": None, "ssl_certfile": None,
             "ssl_keyfile": None}


def service_env(k: KafkaSettings, state: Path, metrics_port: int | None = None
                ) -> dict[str, str]:
    """Environment overrides that point `stream-dedup run` at the demo's topics, state and
    (when given) metrics port."""
    env = {**os.environ, "STREAM_DEDUP__STATE__PATH": str(state)}
    if metrics_port is not None:
        env["STREAM_DEDUP__METRICS__PORT"] = str(metrics_port)
    for name in ("bootstrap_servers", "output_topic", "duplicates_topic", "dead_letter_topic",
                 "group_id"):
        env[f"STREAM_DEDUP__KAFKA__{name.upper()}"] = str(getattr(k, name))
    env["STREAM_DEDUP__KAFKA__INPUT_TOPICS"] = json.dumps(list(k.input_topics))
    for name, value in PLAINTEXT.items():
        env[f"STREAM_DEDUP__KAFKA__{name.upper()}"] = value or "null"
    return env


class ServiceProcess:
    """`stream-dedup run` as a child process with its log in a file."""

    def __init__(self, config: str | None, env: dict[str, str], log_path: Path) -> None:
        self.log_path = log_path
        cmd = [sys.executable, "-m", "stream_dedup.cli", "run"]
        if config:
            cmd += ["--config", config]
        self._log = open(log_path, "w", encoding="utf-8")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(cmd, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise ServiceError(f"the service exited with {self.proc.returncode}:\n"
                               f"{self.tail()}")

    def tail(self, lines: int = 20) -> str:
        text = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def stop(self) -> int:
        """SIGTERM, then SIGKILL if it has not exited after the grace time."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_GRACE_S + 30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode


def wait_joined(k: KafkaSettings, service: ServiceProcess, timeout_s: float) -> None:
    """Until the service's consumer group is stable with a member, so that the measured time
    starts with a service ready to decide (its start-up is not the throughput)."""
    deadline = time.monotonic() + timeout_s
    with admin(k) as client:
        while True:
            service.check_alive()
            try:
                group = client.describe_groups([k.group_id]).get(k.group_id) or {}
                if group.get("group_state") == "Stable" and group.get("members"):
                    return
            except KafkaError:
                pass
            if time.monotonic() > deadline:
                raise ServiceError(f"the service did not join its consumer group within "
                                   f"{timeout_s:.0f} s; its log: {service.log_path}")
            time.sleep(0.2)


def wait_consumed(k: KafkaSettings, service: ServiceProcess, timeout_s: float,
                  err: TextIO) -> None:
    """Until the service's group has committed every input record."""
    deadline = time.monotonic() + timeout_s
    last = -1
    with LagWatch(k.bootstrap_servers, k.group_id, k.input_topics) as watch:
        while True:
            service.check_alive()
            lag = watch.lag()
            if lag == 0:
                return
            if time.monotonic() > deadline:
                raise ServiceError(f"the service still had {lag:,} records to go after "
                                   f"{timeout_s:.0f} s; its log: {service.log_path}")
            if lag != last:
                print(f"  ... {lag:,} records left to decide", file=err)
                last = lag
            time.sleep(0.5)


def run_demo(settings: Settings, config: str | None, input_path: Path, port: int,
             keep_running: bool, rate: float | None, as_json: bool, out: TextIO,
             err: TextIO) -> Summary:
    """Run the demo and print its summary (see the module docstring)."""
    if not input_path.is_file():
        raise ServiceError(f"{input_path}: no such file")
    tag = f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:4]}"
    work = Path(tempfile.mkdtemp(prefix="stream-dedup-demo-"))
    claims = PortClaims()
    try:
        broker_port = claims.claim(port)
        controller_port = claims.claim(broker_port + 1)
        metrics_port = claims.claim(settings.metrics.port) if settings.metrics.port else 0
        if metrics_port != settings.metrics.port:
            settings = dataclasses.replace(
                settings, metrics=dataclasses.replace(settings.metrics, port=metrics_port))
        with LocalBroker(broker_port, run_dir=work / "kafka",
                         controller_port=controller_port) as broker:
            return _demo(settings, config, input_path, broker, tag, work, keep_running, rate,
                         as_json, out, err)
    finally:
        claims.release()
        if keep_running:
            print(f"kept: {work} (broker data, state, service log)", file=err)
        else:
            shutil.rmtree(work, ignore_errors=True)


def _demo(settings: Settings, config: str | None, input_path: Path, broker: LocalBroker,
          tag: str, work: Path, keep_running: bool, rate: float | None, as_json: bool,
          out: TextIO, err: TextIO) -> Summary:
    """Topics, service, feed, wait, count: the demo on a started broker."""
    k = demo_settings(settings.kafka, broker.bootstrap, tag)
    create_topics(k)
    print(f"broker {broker.bootstrap}; topics demo-{tag}-*; state and service log in {work}",
          file=err)
    service = ServiceProcess(config, service_env(k, work / "state", settings.metrics.port),
                             work / "service.log")
    try:
        wait_joined(k, service, 120.0)
        started = time.monotonic()
        sent = produce_file(str(input_path), k.input_topics[0], k.bootstrap_servers,
                            settings.input.id_field, rate)
        print(f"  produced {sent.records:,} records from {input_path.name} in "
              f"{sent.seconds:.1f} s", file=err)
        wait_consumed(k, service, max(120.0, sent.records / 200), err)
        seconds = time.monotonic() - started
        counts = record_counts(k.bootstrap_servers, configured_topics(k))
        duplicates = counts[k.duplicates_topic] if k.duplicates_topic else 0
        summary = Summary(counts[k.input_topics[0]], counts[k.output_topic], duplicates,
                          counts[k.dead_letter_topic], seconds)
        url = metrics_url(settings.metrics) if settings.metrics.port else None
        print_summary(summary, k, input_path, service.log_path, url, out)
        if as_json:
            print(json.dumps(summary.as_json()), file=out)
        if keep_running:
            wait_for_person(k, service, url, err)
    finally:
        service.stop()
    return summary


def print_summary(s: Summary, k: KafkaSettings, input_path: Path, log_path: Path,
                  metrics: str | None, out: TextIO) -> None:
    """The summary for people; `metrics` is the URL of the service's metrics (None: off)."""
    where = (f"{metrics} (Prometheus text; /healthz and /readyz beside it), while the service "
             "runs (--keep-running keeps it up)" if metrics
             else "no metrics port (metrics.port is 0)")
    rows = [
        ("in", f"{s.records_in:,} records from {input_path.name} ({k.input_topics[0]})"),
        ("out", f"{s.out:,} unique ({k.output_topic})"),
        ("duplicates", f"{s.duplicates:,} ({k.duplicates_topic or 'dropped'})"),
        ("dead letters", f"{s.dead_letters:,} ({k.dead_letter_topic})"),
        ("dedup rate", f"{s.dedup_rate:.1%} of the readable messages"),
        ("throughput", f"decided {s.records_in:,} messages in {s.seconds:.1f} s "
                       f"({s.msgs_per_s:,.0f} msgs/s from the first record sent to the last "
                       "offset committed; broker and service start excluded)"),
        ("metrics", where),
        ("service log", f"{log_path} (running totals every minute, per-step timings)"),
    ]
    print("stream-dedup demo", file=out)
    for name, text in rows:
        print(f"  {name:<13}{text}", file=out)


def wait_for_person(k: KafkaSettings, service: ServiceProcess, metrics: str | None,
                    err: TextIO) -> None:
    """Keep everything up until Ctrl-C, saying how to feed and watch it."""
    print(f"\nrunning; feed it:  stream-dedup produce FILE --topic {k.input_topics[0]} "
          f"--bootstrap {k.bootstrap_servers}\n"
          f"watch it:          kcat -C -b {k.bootstrap_servers} -t {k.output_topic} "
          "-f '%h %s\\n'\n"
          + (f"metrics:           curl -s {metrics}\n" if metrics else "")
          + "Ctrl-C stops the service and the broker; their data is kept.", file=err)
    try:
        while True:
            service.check_alive()
            time.sleep(1.0)
    except KeyboardInterrupt:
        print("stopping", file=err)
