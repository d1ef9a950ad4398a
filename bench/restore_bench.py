"""Restore time per million changelog records (`scope: key`; the per-shard figures of the
scaling model), and a restart's time with and without the local checkpoint.

    python bench/restore_bench.py --bootstrap 127.0.0.1:9092 [--records 1000000] [--keep]

Fills one partition of a fresh compacted changelog topic with what the engine really writes:
the dev stream (`STREAM_DEDUP_DEV_STREAM`, else the shipped sample), repeated with
fresh ids and a round marker in the text until `--records` changelog records were sent, decided
by an `Engine` on a RocksDB store wrapped in a `ChangelogStore`. So the record sizes and the mix
(docs, ids, ttl, exact, bucket and anchor rewrites, counters) are the engine's own. Then it
restores the partition into an empty RocksDB store, and opens an engine on it (which rebuilds
the Bloom filter from the docs), and prints records/s, seconds per million records, bytes per
record, changelog records per message and live keys per message (what a compacted changelog
keeps, and so what a restore reads once compaction has run). The changelog is not compacted
yet when it is read (the broker compacts closed segments only): this is the restore of a busy
partition's recent history, the slow case.

Then the restart of that partition on the same machine: the filled directory was closed in sync
with its changelog (checkpoint written), and `open_state` opens it again (restoring only the
records after the checkpoint: none) followed by the engine (the Bloom filter loaded from its
snapshot), against the full restore into an empty directory plus the engine's open (the Bloom
filter rebuilt from every doc): what `scale.checkpoint_max_age_s: 0` costs every restart.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator

import results

from stream_dedup.config import KafkaSettings, Settings
from stream_dedup.decode import decode
from stream_dedup.engine.batch import Engine
from stream_dedup.engine.stored import TABLES
from stream_dedup.kafka.topics import admin
from stream_dedup.records import Message
from stream_dedup.scale.changelog import ChangelogStore
from stream_dedup.scale.restore import (
    changelog_producer,
    ensure_changelog_topics,
    open_state,
    restore,
)
from stream_dedup.state import open_store

MAX_RECORD_BYTES = 8 << 20


def messages(settings: Settings) -> Iterator[Message]:
    """The stream, then again with fresh ids and texts marked by round, without end."""
    path = results.dev_stream()
    with gzip.open(path, "rb") as f:
        base = [json.loads(line) for line in f if line.strip()]
    rounds = 0
    while True:
        for n, obj in enumerate(base):
            raw = json.dumps(results.round_of(obj, rounds), ensure_ascii=False).encode()
            msg = decode(raw, "bench", str(n), 1_700_000_000_000 + n, settings.input)
            if isinstance(msg, Message):
                yield msg
        rounds += 1


def fill(settings: Settings, topic: str, records: int,
         state: str) -> tuple[int, int, float, float]:
    """Decide messages through a changelog store until `records` were sent, then close it;
    returns (messages, records sent, seconds, seconds of the close)."""
    producer = changelog_producer(settings.kafka, MAX_RECORD_BYTES)
    store = ChangelogStore(open_store("rocksdb", state, TABLES), producer, topic, 0,
                           checkpoint_dir=state)
    engine = Engine(settings, store)
    started = time.perf_counter()
    decided = 0
    stream = messages(settings)
    while store.end_offset < records:
        batch = [next(stream) for _ in range(settings.engine.batch_size)]
        engine.process(batch)
        store.flush(120.0)
        decided += len(batch)
        if decided % 20_000 == 0:
            print(f"  filled {store.end_offset:,} records from {decided:,} messages",
                  file=sys.stderr)
    seconds = time.perf_counter() - started
    engine.close()  # Bloom snapshot; in sync with the changelog: synced, checkpoint written
    close_s = time.perf_counter() - started - seconds
    producer.close()
    return decided, store.end_offset, seconds, close_s


def restart(settings: Settings, topic: str, state: str) -> tuple[float, int, float]:
    """Reopen a directory closed with a checkpoint: (seconds to be in sync with the changelog,
    records restored, seconds to open the engine)."""
    producer = changelog_producer(settings.kafka, MAX_RECORD_BYTES)
    try:
        started = time.perf_counter()
        store, report = open_state(settings, state, producer, topic, 0)
        synced = time.perf_counter()
        Engine(settings, store).close()
        return synced - started, report.records, time.perf_counter() - synced
    finally:
        producer.close()


def path_name() -> str:
    return results.dev_stream().name


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap", default="127.0.0.1:9092")
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--keep", action="store_true", help="keep the changelog topic")
    args = ap.parse_args(argv)
    settings = Settings(kafka=KafkaSettings(bootstrap_servers=args.bootstrap))
    topic = f"restore-bench-{uuid.uuid4().hex[:8]}"
    ensure_changelog_topics(settings.kafka, {topic: 1}, MAX_RECORD_BYTES)
    try:
        with tempfile.TemporaryDirectory(prefix="restore-bench-") as tmp:
            decided, sent, fill_s, close_s = fill(settings, topic, args.records,
                                                  f"{tmp}/source")
            print(f"filled: {sent:,} changelog records from {decided:,} messages in "
                  f"{fill_s:.1f} s ({sent / decided:.1f} records per message); clean close "
                  f"(Bloom snapshot, directory synced, checkpoint written) {close_s:.2f} s")
            target = open_store("rocksdb", f"{tmp}/target", TABLES)
            report = restore(target, settings.kafka, topic, 0, 3600.0, MAX_RECORD_BYTES)
            live = {cf: sum(1 for _ in target.scan(cf, b"", b"\xff" * 32))
                    for cf in TABLES}
            opened = time.perf_counter()
            Engine(settings, target).close()
            open_s = time.perf_counter() - opened
            per_million = report.seconds / report.records * 1e6
            print(f"restore: {report.records:,} records, {report.bytes / 1e6:.1f} MB in "
                  f"{report.seconds:.1f} s: {report.records / report.seconds:,.0f} records/s, "
                  f"{per_million:.1f} s per million records, "
                  f"{report.bytes / report.records:.0f} bytes per record (key + value)")
            print(f"live keys (what compaction keeps): {sum(live.values()):,}, "
                  f"{sum(live.values()) / decided:.1f} per message "
                  f"({', '.join(f'{cf} {n / decided:.2f}' for cf, n in live.items())})")
            print(f"engine open after restore (Bloom rebuilt from {decided:,} docs): "
                  f"{open_s:.1f} s")
            sync_s, tail, engine_s = restart(settings, topic, f"{tmp}/source")
            print(f"restart without checkpoint: {report.seconds + open_s:.1f} s (restore "
                  f"{report.seconds:.1f} + engine {open_s:.1f}); with checkpoint: "
                  f"{sync_s + engine_s:.2f} s (checkpoint check and tail of {tail} records "
                  f"{sync_s:.2f} + engine {engine_s:.2f})")
            results.write("restore", f"One partition of the engine's own writes on "
                          f"{path_name()}: {decided:,} messages.\n\n" + results.table([
                ("changelog records", sent),
                ("changelog records per message", round(sent / decided, 1)),
                ("bytes per record (key + value)", round(report.bytes / report.records)),
                ("restore, records/s", round(report.records / report.seconds)),
                ("restore, s per million records", round(per_million, 1)),
                ("live keys per message (what compaction keeps)",
                 round(sum(live.values()) / decided, 1)),
                ("engine open after restore (Bloom rebuilt), s", round(open_s, 2)),
                ("restart without checkpoint, s", round(report.seconds + open_s, 1)),
                ("restart with checkpoint, s", round(sync_s + engine_s, 2)),
                ("clean close that writes the checkpoint, s", round(close_s, 2)),
            ], ("figure", "value")))
    finally:
        if not args.keep:
            with admin(settings.kafka) as client:
                client.delete_topics([topic])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
