"""The streaming service end to end on the real broker: what goes in comes out, once, routed by
the verdict file mode gives; dead letters with reasons; an independent client (kcat) on both
ends. Each test has its own topics, group and state."""

from __future__ import annotations

import json
import os
import random
import subprocess
import uuid

import pytest
from kafka_helpers import (
    ThreadedService,
    file_mode_uniques,
    id_of,
    make_topics,
    produce,
    read_topic,
    service_settings,
    stream_lines,
    wait_drained,
)

from stream_dedup.decode import decode
from stream_dedup.kafka.headers import as_dict
from stream_dedup.records import Message

pytestmark = pytest.mark.integration


def _messages(lines: list[bytes], settings) -> list[Message]:
    out = []
    for n, raw in enumerate(lines):
        m = decode(raw, "t", f"line:{n}", 0, settings.input)
        assert isinstance(m, Message)
        out.append(m)
    return out


def test_dev_stream_through_six_partitions(kafka_bootstrap, unique_topic, tmp_path):
    name, lines = stream_lines()
    topics = make_topics(unique_topic, input_partitions=6)
    settings = service_settings(kafka_bootstrap, topics, f"e2e-{uuid.uuid4().hex[:8]}")
    produce(kafka_bootstrap, topics["input"], lines)
    service = ThreadedService(settings, tmp_path / "state")
    try:
        wait_drained(settings, timeout_s=150, alive=service.thread.is_alive)
    finally:
        service.stop()

    unique = read_topic(kafka_bootstrap, topics["output"])
    dups = read_topic(kafka_bootstrap, topics["duplicates"])
    dead = read_topic(kafka_bootstrap, topics["dead"])
    assert len(lines) == len(unique) + len(dups) + len(dead), "in = out + duplicates + dead"
    assert not dead
    out_ids = [id_of(r.value) for r in unique]
    assert len(set(out_ids)) == len(out_ids), "a message was emitted twice"
    # Six partitions interleave: the service's order is not the file's. Given the order the
    # service read, file mode (the engine alone) must call unique exactly what the topic holds.
    assert set(out_ids) == file_mode_uniques(settings, service.engine.order)
    in_file_order = file_mode_uniques(settings, _messages(lines, settings))
    print(f"\n{name}: {len(lines)} in, {len(unique)} unique, {len(dups)} duplicates; "
          f"file mode in file order: {len(in_file_order)} unique, "
          f"{len(in_file_order ^ set(out_ids))} ids decided differently because of the "
          "partition interleaving")
    # Every output kept the input's key, value and timestamp, and says its verdict.
    for r in unique[:200] + dups[:200]:
        h = as_dict(r.headers)
        assert r.key == str(json.loads(r.value)["id"]).encode()
        assert h["dedup.verdict"] in {"unique", "exact", "near"}
        assert h["dedup.reason"]
    for r in dups:
        h = as_dict(r.headers)
        assert h["dedup.verdict"] in {"exact", "near"}
        assert h["dedup.matched_id"] and "dedup.distance" in h


def _malformed(n: int, rng: random.Random) -> list[bytes]:
    kinds = [b"\xff\xfe\xfa not utf-8", b"   ", b"", b'{"id": "x", "text": ', b'{"id": "y"}',
             b'{"id": "z", "text": "' + "长".encode() * 20000 + b'"}']
    return [rng.choice(kinds) for _ in range(n)]


def test_malformed_records_go_to_dead_letters(kafka_bootstrap, unique_topic, tmp_path):
    rng = random.Random(4)
    _, good = stream_lines(6000)
    bad = _malformed(1000, rng)
    mixed = list(good)
    for raw in bad:
        mixed.insert(rng.randrange(len(mixed) + 1), raw)
    topics = make_topics(unique_topic, input_partitions=1)  # one partition: file order kept
    settings = service_settings(kafka_bootstrap, topics, f"dlq-{uuid.uuid4().hex[:8]}")
    produce(kafka_bootstrap, topics["input"], mixed)
    service = ThreadedService(settings, tmp_path / "state")
    try:
        wait_drained(settings, timeout_s=90, alive=service.thread.is_alive)
    finally:
        service.stop()

    dead = read_topic(kafka_bootstrap, topics["dead"])
    unique = read_topic(kafka_bootstrap, topics["output"])
    dups = read_topic(kafka_bootstrap, topics["duplicates"])
    assert len(dead) == 1000
    assert sorted(r.value for r in dead) == sorted(bad)
    reasons = {}
    for r in dead:
        h = as_dict(r.headers)
        assert h["dedup.source.topic"] == topics["input"]
        assert int(h["dedup.source.offset"]) >= 0 and h["dedup.source.partition"] == "0"
        reasons[h["dedup.error"].split(" ")[0]] = reasons.get(h["dedup.error"].split(" ")[0], 0) + 1
    assert set(reasons) >= {"not", "empty", "malformed", "missing", "text"}, reasons
    assert {id_of(r.value) for r in unique} == file_mode_uniques(settings,
                                                                 _messages(good, settings))
    assert len(unique) + len(dups) == len(good)


def _kcat(args: list[str], stdin: bytes | None = None) -> bytes:
    proc = subprocess.run(args, input=stdin, capture_output=True, timeout=60, check=False,
                          env={**os.environ, "LC_ALL": "C.UTF-8"})
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return proc.stdout


def test_kcat_feeds_the_service_and_reads_its_output(kafka_bootstrap, unique_topic, kcat,
                                                     tmp_path):
    _, lines = stream_lines(1500)
    topics = make_topics(unique_topic, input_partitions=1)
    settings = service_settings(kafka_bootstrap, topics, f"kcat-{uuid.uuid4().hex[:8]}")
    keyed = b"".join(id_of(raw).encode() + b"\t" + raw + b"\n" for raw in lines)
    _kcat([kcat, "-P", "-b", kafka_bootstrap, "-t", topics["input"], "-K", "\t",
           "-H", "origin=kcat"], stdin=keyed)
    service = ThreadedService(settings, tmp_path / "state")
    try:
        wait_drained(settings, timeout_s=60, alive=service.thread.is_alive)
    finally:
        service.stop()

    consume = ["-C", "-b", kafka_bootstrap, "-o", "beginning", "-e", "-f", "%k\t%h\t%s\n"]
    rows = [line.split(b"\t", 2) for line in
            _kcat([kcat, *consume, "-t", topics["output"]]).splitlines()]
    dup_rows = [line.split(b"\t", 2) for line in
                _kcat([kcat, *consume, "-t", topics["duplicates"]]).splitlines()]
    assert len(rows) + len(dup_rows) == len(lines)
    expected = file_mode_uniques(settings, _messages(lines, settings))
    assert {id_of(value) for _, _, value in rows} == expected
    for key, headers, value in rows:
        assert key == id_of(value).encode()
        assert b"origin=kcat" in headers and b"dedup.verdict=unique" in headers
    for _, headers, _ in dup_rows:
        assert b"dedup.matched_id=" in headers and b"dedup.distance=" in headers
