"""`kafka.guarantee: exactly_once` and records a topic refuses: the output topic's
`max.message.bytes` is lowered while the service runs, so outputs that fit the limit read at
start are refused by the broker inside a transaction. The transaction is aborted once, the batch
decided again with those outputs cut into dead letters, and a `read_committed` consumer (kcat)
sees every input exactly once: in = out + duplicates + dead letters."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from kafka import KafkaConsumer
from kafka.admin import ConfigResource, ConfigResourceType
from kafka_helpers import (
    make_topics,
    produce,
    service_settings,
    start_service,
    stop_service,
    stream_lines,
    wait_drained,
)
from test_exactly_once import _committed_ids, _eos

from stream_dedup.kafka import headers as h

pytestmark = pytest.mark.integration
LIMIT = 300_000  # above any batch of the stream's small records, below the large ones


def _dead_letters(bootstrap: str, topic: str) -> list:
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        consumer_timeout_ms=5_000,
    )
    try:
        return list(consumer)
    finally:
        consumer.close()


def test_records_refused_inside_a_transaction_become_cut_dead_letters(
    kafka_bootstrap, unique_topic, kafka_admin, kcat, tmp_path
) -> None:
    topics = make_topics(unique_topic, 1)
    settings = _eos(service_settings(kafka_bootstrap, topics, f"eos-cut-{uuid.uuid4().hex[:8]}"))
    _, lines = stream_lines(2_000)
    log = tmp_path / "service.log"
    proc = start_service(
        settings,
        tmp_path / "state",
        log,
        env={
            "STREAM_DEDUP__INPUT__MAX_BYTES": "1000000",
            "STREAM_DEDUP__INPUT__MAX_CHARS": "200000",
        },
    )
    try:
        deadline = time.monotonic() + 120
        while "running state=" not in log.read_text(errors="replace"):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        kafka_admin.alter_configs(
            [
                ConfigResource(
                    ConfigResourceType.TOPIC,
                    topics["output"],
                    configs={"max.message.bytes": str(LIMIT)},
                )
            ]
        )
        time.sleep(2)  # the broker applies the new limit
        large = [
            json.dumps(
                {"id": f"large-{n}", "text": f"第{n}条长评论：" + "好" * 130_000},
                ensure_ascii=False,
            ).encode()
            for n in range(3)
        ]
        mixed = [*lines[:500], large[0], *lines[500:1500], *large[1:], *lines[1500:]]
        produce(kafka_bootstrap, topics["input"], mixed)
        wait_drained(settings, 180, alive=lambda: proc.poll() is None)
    finally:
        stop_service(proc, log, timeout_s=120)
    seen = {
        t: _committed_ids(kcat, kafka_bootstrap, topics[t])
        for t in ("output", "duplicates", "dead")
    }
    ids = [json.loads(raw)["id"] for raw in mixed]
    every = seen["output"] + seen["duplicates"] + seen["dead"]
    assert sorted(every) == sorted(ids), "an input lost or committed twice"
    assert sorted(seen["dead"]) == ["large-0", "large-1", "large-2"], seen["dead"]
    for letter in _dead_letters(kafka_bootstrap, topics["dead"]):
        got = h.as_dict(letter.headers)
        assert "too large for topic" in got[h.ERROR] and int(got[h.ORIGINAL_SIZE]) > LIMIT
        assert got[h.DIGEST].startswith("sha256:")
    text = log.read_text(errors="replace")
    aborts = [line for line in text.splitlines() if "refused by topic" in line]
    assert len(aborts) == 1 and "Traceback" not in text, aborts
    print(
        f"\nexactly_once, output limit lowered to {LIMIT} bytes while running: {len(ids)} in = "
        f"{len(seen['output'])} out + {len(seen['duplicates'])} duplicates + "
        f"{len(seen['dead'])} dead letters, each committed once; {len(aborts)} transactions "
        "aborted for the refused records"
    )
