"""`stream-dedup produce`: replay a JSONL or text file into a topic, for demos and load.

Each line becomes one record, bytes as they are (bad lines too: they are what dead-letter tests
need). The key is the line's id field when it is JSON with one, so the records of one id land in
one partition; the timestamp is the send time. `rate` paces sending to that many records a
second (None: as fast as the producer takes them).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kafka import KafkaProducer

from ..config import KafkaSettings
from ..errors import ServiceError
from ..files import read_lines
from .security import connect


@dataclass(frozen=True, slots=True)
class Produced:
    records: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.records / max(self.seconds, 1e-9)


def key_of(raw: bytes, id_field: str | None) -> bytes | None:
    """The id field's value (dotted path) of a JSON line, or None."""
    if not id_field or not raw.lstrip().startswith(b"{"):
        return None
    try:
        obj = json.loads(raw)
    except ValueError:
        return None
    for part in id_field.split("."):
        if not isinstance(obj, dict) or part not in obj:
            return None
        obj = obj[part]
    return str(obj).encode() if isinstance(obj, str | int) and not isinstance(obj, bool) else None


def new_producer(bootstrap: str | KafkaSettings) -> KafkaProducer:
    """A producer for `bootstrap` (an address: PLAINTEXT) or kafka settings (with security)."""
    from .topics import cluster

    k, conn = cluster(bootstrap)
    return connect("connecting the producer", k, lambda: KafkaProducer(
        client_id="stream-dedup-produce", acks="all", linger_ms=5, batch_size=256 * 1024,
        allow_auto_create_topics=False, **conn))


def send_lines(producer: KafkaProducer, topic: str, lines: Iterable[bytes],
               id_field: str | None, rate: float | None = None,
               progress: Callable[[int], None] | None = None) -> Produced:
    """Send each line, paced to `rate` records/s; returns after every record was acked, or
    raises ServiceError naming how many were not."""
    failures: list[BaseException] = []
    # The topic's metadata first: the first send would block on it and then burst to catch up
    # with the pacing clock, so the offered rate would not be the one asked for.
    producer.partitions_for(topic)
    started = time.perf_counter()
    n = 0
    for n, raw in enumerate(lines, start=1):
        if rate:
            ahead = started + (n - 1) / rate - time.perf_counter()
            if ahead > 0.001:
                time.sleep(ahead)
        producer.send(topic, value=raw, key=key_of(raw, id_field)).add_errback(failures.append)
        if progress and n % 10_000 == 0:
            progress(n)
    producer.flush()
    if failures:
        raise ServiceError(f"{len(failures)} of {n} records were not acknowledged by the broker "
                           f"(first error: {failures[0]})")
    return Produced(n, time.perf_counter() - started)


def produce_file(path: str, topic: str, bootstrap: str | KafkaSettings, id_field: str | None,
                 rate: float | None = None, progress: Callable[[int], None] | None = None
                 ) -> Produced:
    """Replay `path` (JSONL or text, .gz allowed, '-' for stdin) into `topic`."""
    producer = new_producer(bootstrap)
    try:
        return send_lines(producer, topic, (raw for _, raw in read_lines(path)), id_field, rate,
                          progress)
    finally:
        producer.close()
