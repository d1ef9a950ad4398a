"""Records no topic downstream can take, in the stages of `scale.scope: global`: the fingerprint
stage (`stream-dedup stage fingerprint`, a subprocess) reads records of 1.5 MB and 10 MB mixed
into a stream (an input topic allowing 16 MB); each becomes a dead letter cut to fit the
dead-letter topic, with its size and a digest of the whole value, by the rule the service
follows, and the stage goes on with the records after them."""

from __future__ import annotations

import hashlib
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from kafka import KafkaProducer
from kafka_helpers import make_topics, read_topic, service_env, service_settings, stream_lines

from stream_dedup.kafka import headers as h
from stream_dedup.kafka.topics import group_lag

pytestmark = pytest.mark.integration
BIG = 16 * 1024 * 1024


def test_the_fingerprint_stage_cuts_records_too_large_for_any_output(
    kafka_bootstrap, unique_topic, tmp_path: Path
) -> None:
    topics = make_topics(unique_topic, 1)
    topics["input"] = unique_topic(
        partitions=1, prefix="in-large", configs={"max.message.bytes": str(BIG)}
    )
    staged = {
        "PROBES": unique_topic(partitions=2, prefix="probes"),
        "ANSWERS": unique_topic(partitions=1, prefix="answers"),
        "ORIGINALS": unique_topic(partitions=1, prefix="originals"),
    }
    settings = service_settings(kafka_bootstrap, topics, f"stage-large-{uuid.uuid4().hex[:8]}")
    env = {
        **service_env(settings, tmp_path / "state"),
        "STREAM_DEDUP__SCALE__SCOPE": "global",
        "STREAM_DEDUP__TOPOLOGY__PROBES_PARTITIONS": "2",
        "STREAM_DEDUP__TOPOLOGY__JOIN_PARTITIONS": "1",
    }
    env.update({f"STREAM_DEDUP__TOPOLOGY__{key}_TOPIC": topic for key, topic in staged.items()})
    _, lines = stream_lines(300)
    large = [
        b'{"id": "large-1", "text": "' + b"a" * 1_500_000 + b'"}',
        b'{"id": "large-2", "text": "' + b"b" * 10_000_000 + b'"}',
    ]
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, max_request_size=BIG, acks="all")
    try:
        for i, raw in enumerate(lines):
            if i in (100, 200):
                producer.send(topics["input"], large[i // 200])
            producer.send(topics["input"], raw)
        producer.flush()
    finally:
        producer.close()
    log = tmp_path / "fingerprint.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "stream_dedup.cli", "stage", "fingerprint"],
            env=env,
            stdout=out,
            stderr=out,
        )
    group = f"{settings.kafka.group_id}-fingerprint"
    try:
        deadline = time.monotonic() + 180
        while group_lag(kafka_bootstrap, group, (topics["input"],)) > 0:
            assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "the stage did not read its input"
            time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(120)
    text = log.read_text(errors="replace")
    assert code == 0 and "Traceback" not in text, text[-3000:]
    dead = read_topic(kafka_bootstrap, topics["dead"])
    originals = read_topic(kafka_bootstrap, staged["ORIGINALS"])
    assert len(dead) == 2 and len(originals) == len(lines), (len(dead), len(originals))
    letters = {h.as_dict(r.headers)[h.ORIGINAL_SIZE]: r for r in dead}
    for raw in large:
        letter = letters[str(len(raw))]
        got = h.as_dict(letter.headers)
        assert got[h.DIGEST] == "sha256:" + hashlib.sha256(raw).hexdigest()
        assert "over input.max_bytes" in got[h.ERROR] and "too large for topic" in got[h.ERROR]
        assert got[h.SOURCE_TOPIC] == topics["input"]
        assert raw.startswith(letter.value) and 900_000 < len(letter.value) < 1_000_000
