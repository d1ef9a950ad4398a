"""The service against a real broker with SCRAM-SHA-512 over TLS (`KAFKA_SECURE=1 deploy/kafka.sh`).

- end to end through the SASL_SSL listener: in = out + duplicates + dead letters;
- a wrong password fails as soon as the broker refuses it (no retries) with one line naming
  authentication;
- an untrusted CA fails the same way with one line naming the certificate check;
- every log line, error and metric of those runs is scanned for the password: none has it.
The password comes from a file (like a Kubernetes secret), never from the config.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from kafka_helpers import (
    free_port,
    produce,
    read_topic,
    service_env,
    service_settings,
    start_service,
    stop_service,
    stream_lines,
)

from stream_dedup.config import Settings
from stream_dedup.errors import ServiceError
from stream_dedup.kafka.retry import Backoff
from stream_dedup.kafka.source import KafkaSource
from stream_dedup.kafka.topics import create_topics, group_lag

pytestmark = pytest.mark.integration
FAIL_WITHIN_S = 30.0
REFUSED_WITHIN_S = 5.0  # the broker refuses within ~2 s of the first connection
DUPLICATES = 40
MALFORMED = [b"", b"\xff\xfe not utf-8", b'{"text": ', b'{"id": "no-text"}', b"   "]


def secured(broker, tag: str, **kafka: object) -> Settings:
    topics = {"input": f"sec-in-{tag}", "output": f"sec-unique-{tag}",
              "duplicates": f"sec-dups-{tag}", "dead": f"sec-dead-{tag}"}
    base = service_settings(broker.bootstrap, topics, f"sec-{tag}", partitions=3)
    security = {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
                "sasl_username": broker.user, "sasl_password_file": str(broker.password_file),
                "ssl_cafile": str(broker.cafile)}
    k = dataclasses.replace(base.kafka, **{**security, **kafka})
    return dataclasses.replace(base, kafka=k)


def _run_failing(settings: Settings, tmp_path: Path) -> tuple[int, str, float]:
    """`stream-dedup run` that must fail: (exit code, its whole output, seconds taken)."""
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "stream_dedup.cli", "run"],
                          env=service_env(settings, tmp_path / "state"), capture_output=True,
                          text=True, timeout=FAIL_WITHIN_S * 3)
    return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - started


def _connect_refused(settings: Settings) -> float:
    """Seconds until the consumer's connection fails (the broker refuses within a second or two
    of the first connection; kafka-python alone would wait out its bootstrap timeout)."""
    started = time.monotonic()
    with pytest.raises(ServiceError):
        KafkaSource(settings.kafka, Backoff(0.5, 2.0))
    return time.monotonic() - started


def _said(out: str) -> list[str]:
    """The lines of a failed start besides the INFO lines every start logs."""
    return [line for line in out.splitlines() if line.strip() and " INFO " not in line]


@pytest.fixture(scope="module")
def secured_run(secure_kafka, tmp_path_factory):
    """One secured end-to-end run of `stream-dedup run` (a child process, password from a file,
    metrics port on); returns what the tests check: counts, log, metrics text."""
    tmp = tmp_path_factory.mktemp("secured-run")
    tag = uuid.uuid4().hex[:8]
    settings = secured(secure_kafka, tag)
    k = settings.kafka
    create_topics(k)  # the admin client over SASL_SSL
    _, lines = stream_lines(300)
    dups = [json.dumps({**json.loads(raw), "id": f"{json.loads(raw)['id']}-copy"},
                       ensure_ascii=False).encode() for raw in lines[:DUPLICATES]]
    stream = lines + dups + MALFORMED
    produce(k, k.input_topics[0], stream)  # the producer over SASL_SSL
    log_path = tmp / "service.log"
    metrics_port = free_port()
    proc = start_service(settings, tmp / "state", log_path, metrics_port=metrics_port)
    metrics_text = ""
    try:
        deadline = time.monotonic() + 120
        while group_lag(k, k.group_id, k.input_topics) > 0:
            assert proc.poll() is None, log_path.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "the secured service did not drain its input"
            time.sleep(0.3)
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as r:
            metrics_text = r.read().decode()
    finally:
        stop_service(proc, log_path)
    counts = {name: len(read_topic(secure_kafka.plain_bootstrap, topic))
              for name, topic in (("out", k.output_topic), ("dups", k.duplicates_topic),
                                  ("dead", k.dead_letter_topic))}
    return {"settings": settings, "sent": len(stream), "counts": counts,
            "log": log_path.read_text(errors="replace"), "metrics": metrics_text}


def test_end_to_end_through_scram_over_tls(secured_run):
    c = secured_run["counts"]
    assert secured_run["sent"] == c["out"] + c["dups"] + c["dead"], c
    assert c["dead"] == len(MALFORMED)
    assert c["dups"] >= DUPLICATES
    assert "security=SASL_SSL SCRAM-SHA-512" in secured_run["log"]
    assert "stream_dedup_messages_total" in secured_run["metrics"] or \
        "stream_dedup_" in secured_run["metrics"]


def test_wrong_password_fails_fast_naming_authentication(secure_kafka, tmp_path):
    wrong = tmp_path / "wrong-password"
    wrong.write_text("not-" + secure_kafka.password + "\n")
    settings = secured(secure_kafka, uuid.uuid4().hex[:8], sasl_password_file=str(wrong))
    code, out, took = _run_failing(settings, tmp_path)
    assert code == 1, out
    assert took < FAIL_WITHIN_S, f"took {took:.1f} s"
    assert len(_said(out)) == 1, out  # kafka-python's own lines about it are not logged
    assert "Kafka authentication failed for user" in out, out
    assert "certificate verify failed" not in out.lower().split("authentication failed")[-1]
    assert "retrying" not in out, "a wrong password must not be retried"
    assert secure_kafka.password not in out and wrong.read_text().strip() not in out
    assert (took := _connect_refused(settings)) < REFUSED_WITHIN_S, f"took {took:.1f} s"


def test_untrusted_ca_fails_fast_naming_the_certificate(secure_kafka, tmp_path):
    other_ca = tmp_path / "other-ca.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(tmp_path / "other-ca.key"), "-out", str(other_ca),
                    "-subj", "/CN=not the broker's CA"], check=True, capture_output=True)
    settings = secured(secure_kafka, uuid.uuid4().hex[:8], ssl_cafile=str(other_ca))
    code, out, took = _run_failing(settings, tmp_path)
    assert code == 1, out
    assert took < FAIL_WITHIN_S, f"took {took:.1f} s"
    assert len(_said(out)) == 1, out
    assert "certificate verify failed" in out, out
    assert "authentication failed" not in out.lower(), out
    assert "retrying" not in out
    assert secure_kafka.password not in out
    assert (took := _connect_refused(settings)) < REFUSED_WITHIN_S, f"took {took:.1f} s"


def test_password_appears_in_no_log_error_metric_or_help(secure_kafka, secured_run, tmp_path):
    password = secure_kafka.password
    settings = secured_run["settings"]
    produced = {"service log": secured_run["log"], "metrics": secured_run["metrics"],
                "settings repr": repr(settings)}
    # An error path too: a run that fails (unknown topic) with the right password.
    broken = dataclasses.replace(settings, kafka=dataclasses.replace(
        settings.kafka, input_topics=(f"missing-{uuid.uuid4().hex[:6]}",)))
    _, produced["failed run"], _ = _run_failing(broken, tmp_path)
    for args in (["--help"], ["run", "--help"], ["produce", "--help"]):
        produced[" ".join(args)] = subprocess.run(
            [sys.executable, "-m", "stream_dedup.cli", *args], capture_output=True,
            text=True).stdout
    assert secured_run["log"].strip(), "the secured run logged nothing to scan"
    for name, text in produced.items():
        assert password not in text, f"the password appears in the {name}"
