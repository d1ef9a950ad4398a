"""Benchmark of `scale.scope: global`: the three stages as real processes on a real broker.

    python bench/scale_bench.py --bootstrap 127.0.0.1:29192 [--input STREAM] [--processes 1 2]

For each count of processes per stage, fresh topics (input: 6 partitions, probes: 12, answers
and originals: 6) are made, the whole stream is loaded into the input, and the stages are
started; it prints:

- throughput: messages / seconds from the moment every stage process runs to the last verdict
  written (and the wall time including start-up);
- probes per message, and bytes on the wire per message: record keys and values written to the
  probes, answers and originals topics (and, apart, to the stages' changelog topics);
- the verdicts against file mode: kept by each, ids decided differently, and duplicates whose
  matched message is not earlier in the total order (the property: must be 0);
- index bytes per fingerprint: the index changelogs restored into fresh RocksDB stores (which
  also times the restore: seconds per million changelog records), compacted, disk bytes over
  the messages with a fingerprint; and the logical size (key + value bytes of the entries).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import results
from kafka import KafkaConsumer, TopicPartition

from stream_dedup.config import KafkaSettings, Settings
from stream_dedup.decode import decode
from stream_dedup.engine.batch import Engine
from stream_dedup.engine.index.layout import configured_layout
from stream_dedup.engine.stored import TABLES
from stream_dedup.kafka.headers import MATCHED_ID, VERDICT
from stream_dedup.kafka.produce import new_producer, send_lines
from stream_dedup.kafka.topics import create_topics, record_counts
from stream_dedup.scale.probes import unpack_probes
from stream_dedup.scale.restore import restore
from stream_dedup.state import MemoryStore
from stream_dedup.state.rocksdb import RocksStore

STAGES = ("fingerprint", "index", "decide")
INDEX_FAMILIES = ("exact", "blocks", "anchors", "ids")


def topic_bytes(bootstrap: str, topic: str, probes: bool = False) -> tuple[int, int, int]:
    """(records, key + value bytes, probes packed in them) of a whole topic."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             max_partition_fetch_bytes=8 << 20, fetch_max_bytes=64 << 20)
    try:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        records = size = packed = 0
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            for batch in consumer.poll(timeout_ms=500).values():
                for r in batch:
                    records += 1
                    size += len(r.key or b"") + len(r.value or b"")
                    if probes:
                        packed += len(unpack_probes(r.value))
        return records, size, packed
    finally:
        consumer.close()


def cpu_seconds(proc: subprocess.Popen) -> float:
    """User + system CPU seconds of a running child (Linux /proc)."""
    fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stage_env(k: KafkaSettings, topology: dict[str, str], state: Path) -> dict[str, str]:
    env = {**os.environ, "STREAM_DEDUP__SCALE__SCOPE": "global",
           "STREAM_DEDUP__STATE__PATH": str(state), "STREAM_DEDUP__METRICS__PORT": "0",
           "STREAM_DEDUP__KAFKA__BOOTSTRAP_SERVERS": k.bootstrap_servers,
           "STREAM_DEDUP__KAFKA__INPUT_TOPICS": json.dumps(list(k.input_topics)),
           "STREAM_DEDUP__KAFKA__OUTPUT_TOPIC": k.output_topic,
           "STREAM_DEDUP__KAFKA__DUPLICATES_TOPIC": str(k.duplicates_topic),
           "STREAM_DEDUP__KAFKA__DEAD_LETTER_TOPIC": k.dead_letter_topic,
           "STREAM_DEDUP__KAFKA__GROUP_ID": k.group_id}
    env.update({f"STREAM_DEDUP__TOPOLOGY__{key.upper()}": value
                for key, value in topology.items()})
    return env


def run(bootstrap: str, lines: list[bytes], processes: int, work: Path) -> dict[str, float]:
    tag = uuid.uuid4().hex[:8]
    k = KafkaSettings(bootstrap_servers=bootstrap, input_topics=(f"bench-in-{tag}",),
                      output_topic=f"bench-unique-{tag}", duplicates_topic=f"bench-dups-{tag}",
                      dead_letter_topic=f"bench-dead-{tag}", group_id=f"bench-{tag}",
                      partitions=6)
    topology = {"probes_topic": f"bench-probes-{tag}", "answers_topic": f"bench-answers-{tag}",
                "originals_topic": f"bench-originals-{tag}", "probes_partitions": "12",
                "join_partitions": "6"}
    create_topics(k, 6, {topology["probes_topic"]: 12, topology["answers_topic"]: 6,
                         topology["originals_topic"]: 6})
    producer = new_producer(bootstrap)
    try:
        send_lines(producer, k.input_topics[0], lines, "id")
    finally:
        producer.close()
    outputs = (k.output_topic, k.duplicates_topic, k.dead_letter_topic)
    procs, logs, names = [], [], []
    started = time.monotonic()
    for stage in STAGES:
        for n in range(processes):
            log = work / f"{tag}-{stage}-{n}.log"
            logs.append(log)
            names.append((stage, n))
            env = stage_env(k, topology, work / f"{tag}-state-{stage}-{n}")
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "stream_dedup.cli", "stage", stage], env=env,
                stdout=log.open("ab"), stderr=subprocess.STDOUT))
    try:
        while not all("running stage=" in log.read_text(errors="replace") for log in logs):
            assert all(p.poll() is None for p in procs), "a stage exited at start"
            time.sleep(0.2)
        running = time.monotonic()
        while sum(record_counts(bootstrap, outputs).values()) < len(lines):
            assert all(p.poll() is None for p in procs), "a stage exited"
            time.sleep(0.2)
        done = time.monotonic()
        cpu = {stage: sum(cpu_seconds(p) for p, (st, _) in zip(procs, names, strict=True)
                          if st == stage) for stage in STAGES}
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait(120)
    wire = {t: topic_bytes(bootstrap, t, probes=t == topology["probes_topic"])
            for t in (topology["probes_topic"], topology["answers_topic"],
                      topology["originals_topic"])}
    settings = Settings()
    changelogs = {stage: settings.scale.changelog_for(
        f"{k.group_id}-{stage}", topology["originals_topic" if stage == "decide"
                                          else "probes_topic"]) for stage in ("index", "decide")}
    changelog_bytes = sum(topic_bytes(bootstrap, t)[1] for t in changelogs.values())
    verdicts = compare(bootstrap, (k.output_topic, k.duplicates_topic), lines)
    index = measure_index(k, changelogs["index"], 12, work / f"{tag}-restored")
    n = len(lines)
    return {"processes": processes, "messages": n, "seconds": done - running,
            "msgs_per_s": n / (done - running), "wall_s": done - started,
            "probes_per_msg": wire[topology["probes_topic"]][2] / n,
            "wire_bytes_per_msg": sum(size for _, size, _ in wire.values()) / n,
            "probe_bytes_per_msg": wire[topology["probes_topic"]][1] / n,
            "answer_bytes_per_msg": wire[topology["answers_topic"]][1] / n,
            "original_bytes_per_msg": wire[topology["originals_topic"]][1] / n,
            "changelog_bytes_per_msg": changelog_bytes / n,
            **{f"cpu_s_{stage}": seconds for stage, seconds in cpu.items()}, **verdicts,
            **index}


def compare(bootstrap: str, topics: tuple[str, str], lines: list[bytes]) -> dict[str, float]:
    """The verdicts against file mode (line order): kept by each, ids decided differently, and
    duplicates whose matched message is not earlier in the total order (must be 0)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest", consumer_timeout_ms=5000)
    consumer.subscribe(list(topics))
    seen: dict[str, tuple[tuple[int, bytes], str | None]] = {}
    for r in consumer:
        ident = str(json.loads(r.value)["id"])
        heads = dict(r.headers)
        matched = heads[MATCHED_ID].decode() if heads[VERDICT] != b"unique" else None
        seen.setdefault(ident, ((r.timestamp, ident.encode()), matched))
    consumer.close()
    settings = Settings()
    engine = Engine(settings, MemoryStore(TABLES))
    messages = [decode(raw, f"line:{n}", f"line:{n}", n, settings.input)
                for n, raw in enumerate(lines)]
    file_kept = {v.id for n in range(0, len(messages), 1000)
                 for v in engine.process(messages[n:n + 1000]) if not v.is_duplicate}
    kept = {i for i, (_, m) in seen.items() if m is None}
    later = sum(seen[m][0] >= order for order, m in seen.values() if m is not None)
    return {"kept": len(kept), "kept_file_mode": len(file_kept),
            "decided_differently": len(kept ^ file_kept), "matched_not_earlier": later,
            "ids_out": len(seen)}


def measure_index(k: KafkaSettings, topic: str, partitions: int, into: Path) -> dict[str, float]:
    """Restore every index changelog partition into a fresh store: restore time, then disk bytes
    after compaction and logical bytes."""
    records = seconds = disk = logical = entries = 0.0
    blocks_entries = 0
    for p in range(partitions):
        store = RocksStore(str(into / str(p)))
        try:
            report = restore(store, k, topic, p, 600.0, 8 << 20)
            records += report.records
            seconds += report.seconds
            for cf in INDEX_FAMILIES:
                for key, value in store.scan(cf, b"", b"\xff" * 64):
                    logical += len(key) + len(value)
                    entries += 1
                    blocks_entries += cf == "blocks"
            for view in store._cfs.values():  # the bench measures the compacted size
                view.compact_range(None, None)
        finally:
            store.close()
        disk += store.disk_bytes()  # after close: the memtable flushed, the log cut
    tables = len(configured_layout(Settings()).tables)
    fingerprints = blocks_entries / tables  # each fingerprint is in every block table once
    return {"restore_s_per_million_records": seconds / max(records, 1) * 1e6,
            "restored_records": records, "index_entries": entries,
            "fingerprints": fingerprints, "index_disk_bytes_per_fp": disk / fingerprints,
            "index_logical_bytes_per_fp": logical / fingerprints,
            "index_logical_bytes_per_entry": logical / max(entries, 1)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap", default=os.environ.get("STREAM_DEDUP_KAFKA_BOOTSTRAP"))
    p.add_argument("--input", type=Path, default=results.dev_stream())
    p.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    p.add_argument("--limit", type=int, help="first N messages only")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    if not args.bootstrap:
        p.error("--bootstrap (or STREAM_DEDUP_KAFKA_BOOTSTRAP) is required")
    with gzip.open(args.input, "rb") as f:
        lines = [line.rstrip(b"\n") for line in f if line.strip()][: args.limit]
    found: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="scale-bench-") as work:
        for processes in args.processes:
            figures = run(args.bootstrap, lines, processes, Path(work))
            found[f"{processes} per stage"] = figures
            if args.json:
                print(json.dumps(figures))
                continue
            print(f"\n{processes} process(es) per stage, {figures['messages']:,} messages")
            for key, value in figures.items():
                print(f"  {key:34} {value:,.2f}")
    names = list(next(iter(found.values())))
    results.write("scale-global", f"Scope global on {args.input.name}, broker and every stage "
                  "process on this host.\n\n" + results.table(
                      [(n, *(f[n] for f in found.values())) for n in names],
                      ("figure", *found)))


if __name__ == "__main__":
    main()
