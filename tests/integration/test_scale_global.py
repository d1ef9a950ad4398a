"""`scale.scope: global` on the real broker: the three stages as real `stream-dedup stage ...`
subprocesses, two of each, on 6 input partitions, fed a prefix of the dev stream (plus two
unreadable records); one `index` process is killed with SIGKILL mid-run.

Checked: every input id lands in output, duplicates or dead letters; a message is dropped only as
a duplicate of a message earlier in the total order (event time, then id), so no pair drops
each other and every chain of `matched_id` ends at a kept message; the killed process's shards
were restored from the changelog by the survivor; and the verdicts against single-process file
mode, with every difference explained by the order of its pair (the record timestamps of a
6-partition topic order some copies before their originals) or by arrival (a shard answers only
entries that reached it first, so a copy whose probes arrive before its original's misses it:
then both are kept, never both dropped).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
from kafka_helpers import (
    id_of,
    make_topics,
    read_topic,
    service_env,
    service_settings,
    stream_lines,
)
from prometheus_client.parser import text_string_to_metric_families

from stream_dedup.decode import decode
from stream_dedup.engine import Engine
from stream_dedup.kafka import headers as h
from stream_dedup.kafka.produce import key_of, new_producer
from stream_dedup.kafka.topics import group_lag, record_counts
from stream_dedup.scale.probes import unpack_original
from stream_dedup.state import MemoryStore

pytestmark = pytest.mark.integration
MESSAGES = int(os.environ.get("STREAM_DEDUP_GLOBAL_MESSAGES", "6000"))
BAD = [b"{not json", b"\xff\xfe not utf-8"]
STAGES = ("fingerprint", "index", "decide")


def _start(stage: str, env: dict[str, str], log: Path) -> subprocess.Popen:
    out = open(log, "ab")  # noqa: SIM115 (inherited by the child; closed with the test)
    return subprocess.Popen([sys.executable, "-m", "stream_dedup.cli", "stage", stage],
                            env=env, stdout=out, stderr=out)


def _lag(settings, stage: str, topics: tuple[str, ...]) -> int:
    k = settings.kafka
    return group_lag(k.bootstrap_servers, f"{k.group_id}-{stage}", topics)


def _wait(what: str, done, procs: list[subprocess.Popen], timeout_s: float = 600.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        for p in procs:
            assert p.poll() is None, f"a stage exited with {p.returncode} while waiting: {what}"
        assert time.monotonic() < deadline, f"timed out waiting: {what}"
        time.sleep(0.5)


def _order(record) -> tuple[int, bytes]:
    return record.timestamp, id_of(record.value).encode()


def test_global_scope_two_per_stage_kill9_index(kafka_bootstrap, unique_topic, tmp_path):
    name, lines = stream_lines(MESSAGES)
    topics = make_topics(unique_topic, input_partitions=6)
    staged = {"PROBES": unique_topic(partitions=12, prefix="probes"),
              "ANSWERS": unique_topic(partitions=6, prefix="answers"),
              "ORIGINALS": unique_topic(partitions=6, prefix="originals")}
    settings = service_settings(kafka_bootstrap, topics, f"global-{uuid.uuid4().hex[:8]}")
    k = settings.kafka
    env = {**service_env(settings, tmp_path / "unused"), "STREAM_DEDUP__SCALE__SCOPE": "global",
           "STREAM_DEDUP__TOPOLOGY__PROBES_PARTITIONS": "12",
           "STREAM_DEDUP__TOPOLOGY__JOIN_PARTITIONS": "6"}
    env.update({f"STREAM_DEDUP__TOPOLOGY__{key}_TOPIC": topic for key, topic in staged.items()})
    procs: dict[tuple[str, int], subprocess.Popen] = {}
    logs: dict[tuple[str, int], Path] = {}
    try:
        for stage in STAGES:
            for n in range(2):
                logs[stage, n] = tmp_path / f"{stage}-{n}.log"
                procs[stage, n] = _start(stage, {**env, "STREAM_DEDUP__STATE__PATH":
                                                 str(tmp_path / f"state-{stage}-{n}")},
                                         logs[stage, n])
        index_topics = (staged["PROBES"],)
        decide_topics = (staged["ORIGINALS"], staged["ANSWERS"])
        # Half the input, then kill an index process once verdicts come out, then the rest:
        # the killed process's shards must answer the second half's probes from their new owner.
        half = len(lines) // 2
        _produce(kafka_bootstrap, topics["input"], [*lines[:100], *BAD, *lines[100:half]])
        outputs = (topics["output"], topics["duplicates"])
        _wait("a fifth of the first half's verdicts out",
              lambda: _count(settings, outputs) >= half // 5, list(procs.values()))
        victim = procs.pop(("index", 0))
        victim.kill()
        victim.wait(30)
        out_at_kill = _count(settings, outputs)
        _produce(kafka_bootstrap, topics["input"], lines[half:])
        alive = list(procs.values())
        _wait("the input drained", lambda: group_lag(
            k.bootstrap_servers, f"{k.group_id}-fingerprint", k.input_topics) == 0, alive)
        _wait("the probes drained", lambda: _lag(settings, "index", index_topics) == 0, alive)
        _wait("answers and originals drained",
              lambda: _lag(settings, "decide", decide_topics) == 0, alive)
    finally:
        for p in procs.values():
            p.terminate()
        for p in procs.values():
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
    survivor_log = logs["index", 1].read_text(errors="replace")
    restored = [line for line in survivor_log.splitlines() if "state restored stage=index" in line
                and " records=0 " not in line]
    assert restored, "the surviving index process restored no shard from the changelog:\n" + (
        survivor_log[-3000:])

    # Each decide member ends up owning the same partition numbers of originals and answers
    # (range assignment over equal counts), and together all of them.
    owned = []
    for n in range(2):
        text = logs["decide", n].read_text(errors="replace")
        last = re.findall(r"partitions assigned partitions=(\S+)", text)[-1].split(",")
        by_topic = {t: {int(tp.rsplit("/", 1)[1]) for tp in last if tp.startswith(t + "/")}
                    for t in (staged["ORIGINALS"], staged["ANSWERS"])}
        assert by_topic[staged["ORIGINALS"]] == by_topic[staged["ANSWERS"]], last
        owned += sorted(by_topic[staged["ANSWERS"]])
        assert "not co-partitioned" not in text
    assert sorted(owned) == list(range(6)), owned

    unique = read_topic(kafka_bootstrap, topics["output"])
    dups = read_topic(kafka_bootstrap, topics["duplicates"])
    dead = read_topic(kafka_bootstrap, topics["dead"])
    assert len(dead) == len(BAD)
    verdicts = {}
    for r in unique + dups:
        v = h.as_dict(r.headers)
        first = verdicts.setdefault(id_of(r.value), (r, v))
        assert first[1]["dedup.verdict"] == v["dedup.verdict"], "two verdicts for one id"
    ids = [id_of(raw) for raw in lines]
    missing = set(ids) - set(verdicts)
    assert not missing, f"{len(missing)} input ids lost, e.g. {sorted(missing)[:5]}"

    # The property: dropped only as a duplicate of an EARLIER message; chains end at a kept one.
    order = {i: _order(r) for i, (r, _) in verdicts.items()}
    kept = {i for i, (_, v) in verdicts.items() if v["dedup.verdict"] == "unique"}
    matched = {i: v["dedup.matched_id"] for i, (_, v) in verdicts.items() if i not in kept}
    for i, m in matched.items():
        assert order[m] < order[i], f"{i} dropped as a duplicate of the later {m}"
    for i in matched:
        seen = {i}
        while i in matched:
            i = matched[i]
            assert i not in seen
            seen.add(i)
        assert i in kept

    # Against file mode (line order), each difference explained by its pair's order or arrival.
    messages = [decode(raw, f"{name}:{n}", f"line:{n}", n, settings.input)
                for n, raw in enumerate(lines)]
    file_mode = _file_mode(settings, messages)
    file_kept = {i for i, m in file_mode.items() if m is None}
    line_of = {m.id: n for n, m in enumerate(messages)}
    partition_of = {id_of(r.value): r.partition
                    for r in read_topic(kafka_bootstrap, topics["input"]) if r.key}
    flipped = arrival = other = 0
    for i in ids:
        if (i in kept) == (i in file_kept):
            continue
        pairs = [m for m in (file_mode[i], matched.get(i)) if m is not None]
        if any((line_of[m] < line_of[i]) != (order[m] < order[i]) for m in pairs):
            flipped += 1
        elif i in kept and partition_of[file_mode[i]] != partition_of[i]:
            # File mode found the earlier copy; it came from another input partition and its
            # probes reached the shard after this message's (a shard answers what it has).
            arrival += 1
        else:
            other += 1
    differences = flipped + arrival + other
    print(f"\nglobal scope: {len(ids)} messages + {len(BAD)} dead letters, 2 processes per "
          f"stage, index-0 killed with {out_at_kill} verdicts out; kept {len(kept)} (file mode "
          f"{len(file_kept)}); "
          f"{differences} decided differently: {flipped} the pair's order differs, {arrival} "
          f"missed by arrival order, {other} otherwise; restored by the survivor:\n"
          + "\n".join(restored))
    assert other == 0


def test_stages_serve_metrics_that_agree_with_the_topics(kafka_bootstrap, unique_topic,
                                                          tmp_path):
    """One process per stage, each on its own metrics port: `/readyz` turns ready, and once the
    input is decided `/metrics` counts exactly what the topics hold (no replay: one member a
    group, no failure), the changelog records each stateful stage wrote, and its state."""
    count = 300
    _, lines = stream_lines(count)
    topics = make_topics(unique_topic, input_partitions=3)
    staged = {"PROBES": unique_topic(partitions=4, prefix="probes"),
              "ANSWERS": unique_topic(partitions=2, prefix="answers"),
              "ORIGINALS": unique_topic(partitions=2, prefix="originals")}
    settings = service_settings(kafka_bootstrap, topics, f"gmetrics-{uuid.uuid4().hex[:8]}")
    env = {**service_env(settings, tmp_path / "unused"), "STREAM_DEDUP__SCALE__SCOPE": "global",
           "STREAM_DEDUP__TOPOLOGY__PROBES_PARTITIONS": "4",
           "STREAM_DEDUP__TOPOLOGY__JOIN_PARTITIONS": "2"}
    env.update({f"STREAM_DEDUP__TOPOLOGY__{key}_TOPIC": topic for key, topic in staged.items()})
    ports = {stage: _free_port() for stage in STAGES}
    procs = {stage: _start(stage, {**env, "STREAM_DEDUP__STATE__PATH": str(tmp_path / stage),
                                   "STREAM_DEDUP__METRICS__PORT": str(ports[stage])},
                           tmp_path / f"{stage}.log") for stage in STAGES}
    try:
        _wait("every stage ready", lambda: all(_get(ports[s], "/readyz")[0] == 200
                                               for s in STAGES), list(procs.values()), 300)
        _produce(kafka_bootstrap, topics["input"], [*lines, *BAD])
        outputs = (topics["output"], topics["duplicates"])
        _wait("every message decided", lambda: _count(settings, outputs) == count,
              list(procs.values()), 300)
        _wait("the answers and originals committed", lambda: _lag(
            settings, "decide", (staged["ORIGINALS"], staged["ANSWERS"])) == 0,
              list(procs.values()), 300)
        scraped = {stage: _scrape(ports[stage]) for stage in STAGES}
        health = {stage: (_get(ports[stage], "/healthz")[0], _get(ports[stage], "/readyz"))
                  for stage in STAGES}
    finally:
        for p in procs.values():
            p.terminate()
        for p in procs.values():
            p.wait(60)
    assert all(code == 200 and ready == (200, "ready") for code, ready in health.values()), health
    held = record_counts(kafka_bootstrap, [*topics.values(), *staged.values()])
    sc = settings.scale
    group = settings.kafka.group_id
    changelogs = {"index": sc.changelog_for(f"{group}-index", staged["PROBES"]),
                  "decide": sc.changelog_for(f"{group}-decide", staged["ORIGINALS"])}
    held.update(record_counts(kafka_bootstrap, changelogs.values()))
    probes = sum(unpack_original(r.value).probes
                 for r in read_topic(kafka_bootstrap, staged["ORIGINALS"]))
    f, i, d = (scraped[stage] for stage in STAGES)
    assert f["records_in_total", "input"] == count + len(BAD)
    assert f["records_out_total", "probes"] == held[staged["PROBES"]]
    assert f["records_out_total", "originals"] == held[staged["ORIGINALS"]] == count
    assert f["records_out_total", "dead_letters"] == held[topics["dead"]] == len(BAD)
    assert f["partitions_served", topics["input"]] == 3
    assert i["records_in_total", "probes"] == held[staged["PROBES"]]
    assert i["records_out_total", "answers"] == held[staged["ANSWERS"]]
    assert i["changelog_records_total"] == held[changelogs["index"]] > 0
    assert i["index_entries"] == probes
    assert {n: i["restore_records", n] for n in "0123"} == dict.fromkeys("0123", 0)
    assert d["records_in_total", "originals"] == count
    assert d["records_in_total", "answers"] == held[staged["ANSWERS"]]
    assert d["records_out_total", "output"] == held[topics["output"]]
    assert d["records_out_total", "duplicates"] == held[topics["duplicates"]]
    assert d["changelog_records_total"] == held[changelogs["decide"]] > 0
    assert d["pending_joins"] == 0
    assert d["partitions_served", staged["ORIGINALS"]] == d["partitions_served",
                                                            staged["ANSWERS"]] == 2
    for stage, got in scraped.items():
        handled = sum(v for k, v in got.items() if k[0] == "records_in_total")
        assert 0 < got["batch_duration_seconds_count"] <= handled, stage
        assert got["errors_total", "commit"] == 0, stage
        assert got.get("consumer_lag_records", 0) == 0, stage


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(port: int, path: str) -> tuple[int, str]:
    """Status and body of a path of a stage's metrics port (0: not listening yet)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as resp:
            return resp.status, resp.read().decode().strip()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode().strip()
    except OSError:
        return 0, ""


def _scrape(port: int) -> dict:
    """The `stream_dedup_*` samples of one stage, keyed by the name after `stream_dedup_` or
    `stream_dedup_global_` and the label that tells the stage's series apart (kind, topic or
    partition; lag summed over partitions)."""
    code, text = _get(port, "/metrics")
    assert code == 200, text
    out: dict = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if not sample.name.startswith("stream_dedup_") or "build" in sample.name:
                continue
            name = sample.name.removeprefix("stream_dedup_").removeprefix("global_")
            labels = {k: v for k, v in sample.labels.items() if k not in ("stage", "le")}
            if name == "consumer_lag_records":
                out[name] = out.get(name, 0) + sample.value
            elif "le" not in sample.labels:
                out[(name, *labels.values()) if labels else name] = sample.value
    return out


def _produce(bootstrap: str, topic: str, lines: list[bytes]) -> None:
    producer = new_producer(bootstrap)
    try:
        for raw in lines:
            producer.send(topic, value=raw, key=key_of(raw, "id"))
        producer.flush()
    finally:
        producer.close()


def _count(settings, topics: tuple[str, ...]) -> int:
    return sum(record_counts(settings.kafka.bootstrap_servers, topics).values())


def _file_mode(settings, messages) -> dict[str, str | None]:
    """File mode's verdicts in line order: each id with the id it duplicates (None: kept)."""
    engine = Engine(settings, MemoryStore())
    out = {}
    size = settings.engine.batch_size
    for n in range(0, len(messages), size):
        for v in engine.process(messages[n:n + size]):
            out[v.id] = v.matched_id if v.is_duplicate else None
    return out


def test_topics_create_makes_the_staged_topics(kafka_bootstrap, kafka_admin):
    """`stream-dedup topics create` with `scale.scope: global` adds probes, answers and
    originals with their own partition counts (answers and originals alike)."""
    tag = uuid.uuid4().hex[:8]
    names = {key: f"{key.lower()}-{tag}" for key in ("PROBES", "ANSWERS", "ORIGINALS")}
    env = {**os.environ, "STREAM_DEDUP__SCALE__SCOPE": "global",
           "STREAM_DEDUP__KAFKA__BOOTSTRAP_SERVERS": kafka_bootstrap,
           "STREAM_DEDUP__KAFKA__INPUT_TOPICS": f'["in-{tag}"]',
           "STREAM_DEDUP__KAFKA__OUTPUT_TOPIC": f"out-{tag}",
           "STREAM_DEDUP__KAFKA__DUPLICATES_TOPIC": f"dups-{tag}",
           "STREAM_DEDUP__KAFKA__DEAD_LETTER_TOPIC": f"dead-{tag}",
           "STREAM_DEDUP__TOPOLOGY__PROBES_PARTITIONS": "5",
           "STREAM_DEDUP__TOPOLOGY__JOIN_PARTITIONS": "3",
           **{f"STREAM_DEDUP__TOPOLOGY__{key}_TOPIC": name for key, name in names.items()}}
    made = [*names.values(), f"in-{tag}", f"out-{tag}", f"dups-{tag}", f"dead-{tag}"]
    try:
        done = subprocess.run([sys.executable, "-m", "stream_dedup.cli", "topics", "create"],
                              env=env, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        counts = {t["name"]: len(t["partitions"])
                  for t in kafka_admin.describe_topics(list(names.values()))}
        assert counts == {names["PROBES"]: 5, names["ANSWERS"]: 3, names["ORIGINALS"]: 3}
    finally:
        kafka_admin.delete_topics(made, raise_errors=False)
