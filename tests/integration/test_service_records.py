"""Records no topic downstream can take, on the real broker: records of 1.5 MB and 10 MB mixed
into a stream (an input topic allowing 16 MB) become dead letters cut to fit the dead-letter
topic, with their size and a digest of the whole value, and the service keeps running."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

import pytest
from kafka import KafkaProducer
from kafka_helpers import (
    make_topics,
    produce,
    read_topic,
    service_settings,
    start_service,
    stop_service,
    stream_lines,
    wait_drained,
)

from stream_dedup.kafka import headers as h

pytestmark = pytest.mark.integration
BIG = 16 * 1024 * 1024


def test_records_too_large_for_any_output_are_cut_dead_letters(
        kafka_bootstrap, unique_topic, tmp_path: Path) -> None:
    topics = make_topics(unique_topic, 1)
    topics["input"] = unique_topic(partitions=1, prefix="in-large",
                                   configs={"max.message.bytes": str(BIG)})
    settings = service_settings(kafka_bootstrap, topics, f"large-{uuid.uuid4().hex[:8]}")
    _, lines = stream_lines(400)
    large = {1_500_000: b'{"id": "large-1", "text": "' + b"a" * 1_500_000 + b'"}',
             10_000_000: b'{"id": "large-2", "text": "' + b"b" * 10_000_000 + b'"}'}
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, max_request_size=BIG,
                             acks="all")
    try:
        for i, raw in enumerate(lines):
            if i in (100, 250):
                producer.send(topics["input"], large[1_500_000 if i == 100 else 10_000_000])
            producer.send(topics["input"], raw)
        producer.flush()
    finally:
        producer.close()
    log = tmp_path / "service.log"
    proc = start_service(settings, tmp_path / "state", log)
    try:
        wait_drained(settings, 120, alive=lambda: proc.poll() is None)
        produce(kafka_bootstrap, topics["input"], lines[:50])  # it still runs: more is read
        wait_drained(settings, 60, alive=lambda: proc.poll() is None)
    finally:
        stop_service(proc, log)
    unique = read_topic(kafka_bootstrap, topics["output"])
    dups = read_topic(kafka_bootstrap, topics["duplicates"])
    dead = read_topic(kafka_bootstrap, topics["dead"])
    assert len(unique) + len(dups) + len(dead) == len(lines) + 2 + 50
    letters = {h.as_dict(r.headers)[h.ORIGINAL_SIZE]: r for r in dead}
    for raw in large.values():
        letter = letters[str(len(raw))]
        got = h.as_dict(letter.headers)
        assert got[h.DIGEST] == "sha256:" + hashlib.sha256(raw).hexdigest()
        assert "over input.max_bytes" in got[h.ERROR] and "too large for topic" in got[h.ERROR]
        assert raw.startswith(letter.value) and 900_000 < len(letter.value) < 1_000_000
    assert "Traceback" not in log.read_text(errors="replace")
