"""`scale.scope: global` on the real broker: the three stages as real `stream-dedup stage ...`
subprocesses, two of each, on 6 input partitions, fed a prefix of the dev stream (plus two
unreadable records) in parts; after each part but the last one process of a stage is killed
with SIGKILL: an `index`, then a `fingerprint` process amid their work in one run; in a smaller
run of its own a `decide` process whose joins hold originals waiting for answers.

Checked: every input id lands in output, duplicates or dead letters (a record emitted twice, a
replay after a kill, carries its first verdict again); a message is dropped only as a duplicate
of a message earlier in the total order (event time, then id), so no pair drops each other and
every chain of `matched_id` ends at a kept message; the killed processes' shards and joins were
restored from the changelog by the survivors; and the verdicts against single-process file
mode, with every difference explained by the order of its pair (the record timestamps of a
6-partition topic order some copies before their originals) or by arrival (a shard answers only
entries that reached it first, so a copy whose probes arrive before its original's misses it:
then both are kept, never both dropped).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
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

from stream_dedup.config import Settings
from stream_dedup.decode import decode
from stream_dedup.engine.batch import Engine
from stream_dedup.engine.stored import TABLES
from stream_dedup.kafka import headers as h
from stream_dedup.kafka.produce import key_of, new_producer
from stream_dedup.kafka.topics import group_lag, record_counts
from stream_dedup.scale.probes import unpack_original
from stream_dedup.state import MemoryStore

pytestmark = pytest.mark.integration
MESSAGES = int(os.environ.get("STREAM_DEDUP_GLOBAL_MESSAGES", "6000"))
BAD = [b"{not json", b"\xff\xfe not utf-8"]
STAGES = ("fingerprint", "index", "decide")
DECIDE_KILL_MESSAGES = 3000


def _start(stage: str, env: dict[str, str], log: Path) -> subprocess.Popen:
    out = open(log, "ab")  # noqa: SIM115 (inherited by the child; closed with the test)
    return subprocess.Popen([sys.executable, "-m", "stream_dedup.cli", "stage", stage],
                            env=env, stdout=out, stderr=out)


def _lag(settings, stage: str, topics: tuple[str, ...]) -> int:
    k = settings.kafka
    return group_lag(k.bootstrap_servers, f"{k.group_id}-{stage}", topics)


def _wait(what: str, done, procs: list[subprocess.Popen], timeout_s: float = 600.0,
          every_s: float = 0.5) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        for p in procs:
            assert p.poll() is None, f"a stage exited with {p.returncode} while waiting: {what}"
        assert time.monotonic() < deadline, f"timed out waiting: {what}"
        time.sleep(every_s)


def _order(record) -> tuple[int, bytes]:
    return record.timestamp, id_of(record.value).encode()


def _kills(run: GlobalRun) -> str:
    return ", ".join(f"{stage}-0 with {out} verdicts out" for stage, out in run.at_kill.items())


def _verdict(headers: dict[str, str]) -> tuple[str, str | None]:
    return headers["dedup.verdict"], headers.get("dedup.matched_id")


def _moment(settings, staged: dict[str, str], stage: str | None, done: int, size: int
            ) -> tuple[str, Callable[[], bool]]:
    """When process 0 of `stage` is to die, `done` messages produced, the last `size` of them
    the part just produced: a decide process once it has taken all their originals (its joins
    hold them waiting for answers while the index processes are stopped), any other once a
    fifth of the part is decided (looked at often: it dies amid its work); with no stage to
    kill, once all are decided."""
    if stage == "decide":
        originals = (staged["ORIGINALS"],)
        return "all originals taken by decide", lambda: (
            _count(settings, originals) >= done and _lag(settings, "decide", originals) == 0)
    verdicts = done if stage is None else done - size + size // 5
    outputs = (settings.kafka.output_topic, settings.kafka.duplicates_topic)
    return f"{verdicts} verdicts out", lambda: _count(settings, outputs) >= verdicts


def _kill(procs: dict[tuple[str, int], subprocess.Popen], stage: str, settings,
          outputs: tuple[str, ...]) -> int:
    """SIGKILL process 0 of `stage`; returns the verdicts out then."""
    victim = procs.pop((stage, 0))
    victim.kill()
    victim.wait(30)
    return _count(settings, outputs)


def _hold(procs: dict[tuple[str, int], subprocess.Popen], stage: str
          ) -> list[subprocess.Popen]:
    """Stop (SIGSTOP) every live process of `stage`; SIGCONT the ones returned to go on."""
    held = [p for (s, _), p in procs.items() if s == stage]
    for p in held:
        p.send_signal(signal.SIGSTOP)
    return held


def _restored(log: Path, stage: str) -> list[str]:
    """The non-empty restores of `stage`'s partitions since the last assignment in a survivor's
    log, the one that gave it the killed process's partitions (asserted: at least one)."""
    text = log.read_text(errors="replace")
    since = text[text.rindex("partitions assigned"):]
    lines = [line for line in since.splitlines()
             if f"state restored stage={stage}" in line and " records=0 " not in line]
    assert lines, f"the surviving {stage} process restored no partition:\n{text[-3000:]}"
    return lines


def _numbers(partitions: list[str], topics: tuple[str, ...]) -> dict[str, set[int]]:
    """Partition numbers by topic of a logged assignment (`topic/n,...`)."""
    return {t: {int(tp.rsplit("/", 1)[1]) for tp in partitions if tp.startswith(t + "/")}
            for t in topics}


@dataclass(frozen=True)
class GlobalRun:
    """What one run of the three stages left: its settings, topics, stage logs (by stage and
    process number), verdicts out when each victim was killed, and every output record."""

    settings: Settings
    topics: dict[str, str]
    staged: dict[str, str]
    logs: dict[tuple[str, int], Path]
    at_kill: dict[str, int]  # by the stage killed
    unique: list
    dups: list
    dead: list


def _run(kafka_bootstrap: str, unique_topic, tmp_path: Path, lines: list[bytes],
         killed: tuple[str | None, ...]) -> GlobalRun:
    """Two processes per stage; the input in len(killed) + 1 parts, the BAD records inside the
    first; after each part but the last, process 0 of the next stage in `killed` gets SIGKILL
    (None: none, the part is decided in full first): its work must go on at the survivor
    (index shards and decide joins restored from their changelogs) with the rest of the
    input. An `index` or `fingerprint` process dies once a fifth of the part is decided; a
    `decide` process once it has taken the part's originals while the index processes are
    stopped (`_moment`)."""
    topics = make_topics(unique_topic, input_partitions=6)
    staged = {"PROBES": unique_topic(partitions=12, prefix="probes"),
              "ANSWERS": unique_topic(partitions=6, prefix="answers"),
              "ORIGINALS": unique_topic(partitions=6, prefix="originals")}
    settings = service_settings(kafka_bootstrap, topics, f"global-{uuid.uuid4().hex[:8]}")
    k = settings.kafka
    # Batches of 100 records: a part is many batches, so a kill lands amid one's steps.
    env = {**service_env(settings, tmp_path / "unused"), "STREAM_DEDUP__SCALE__SCOPE": "global",
           "STREAM_DEDUP__TOPOLOGY__PROBES_PARTITIONS": "12",
           "STREAM_DEDUP__TOPOLOGY__JOIN_PARTITIONS": "6",
           "STREAM_DEDUP__KAFKA__POLL_BATCH_SIZE": "100"}
    env.update({f"STREAM_DEDUP__TOPOLOGY__{key}_TOPIC": topic for key, topic in staged.items()})
    procs: dict[tuple[str, int], subprocess.Popen] = {}
    logs: dict[tuple[str, int], Path] = {}
    outputs = (topics["output"], topics["duplicates"])
    at_kill: dict[str, int] = {}
    count = len(killed) + 1
    parts = [lines[n * len(lines) // count:(n + 1) * len(lines) // count] for n in range(count)]
    try:
        for stage in STAGES:
            for n in range(2):
                logs[stage, n] = tmp_path / f"{stage}-{n}.log"
                procs[stage, n] = _start(stage, {**env, "STREAM_DEDUP__STATE__PATH":
                                                 str(tmp_path / f"state-{stage}-{n}")},
                                         logs[stage, n])
        done = 0  # messages in the parts produced before this one
        for n, (part, stage) in enumerate(zip(parts, (*killed, None), strict=True)):
            held = _hold(procs, "index") if stage == "decide" else []
            _produce(kafka_bootstrap, topics["input"],
                     [*part[:100], *BAD, *part[100:]] if n == 0 else part)
            done += len(part)
            if n < len(killed):
                what, ready = _moment(settings, staged, stage, done, len(part))
                _wait(what, ready, list(procs.values()), every_s=0.05)
            if stage is not None:
                at_kill[stage] = _kill(procs, stage, settings, outputs)
            for p in held:
                p.send_signal(signal.SIGCONT)
        alive = list(procs.values())
        _wait("the input drained", lambda: group_lag(
            k.bootstrap_servers, f"{k.group_id}-fingerprint", k.input_topics) == 0, alive)
        _wait("the probes drained",
              lambda: _lag(settings, "index", (staged["PROBES"],)) == 0, alive)
        _wait("answers and originals drained", lambda: _lag(
            settings, "decide", (staged["ORIGINALS"], staged["ANSWERS"])) == 0, alive)
    finally:
        for p in procs.values():
            p.send_signal(signal.SIGCONT)  # in case a failed wait left it stopped
            p.terminate()
        for p in procs.values():
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
    return GlobalRun(settings, topics, staged, logs, at_kill,
                     read_topic(kafka_bootstrap, topics["output"]),
                     read_topic(kafka_bootstrap, topics["duplicates"]),
                     read_topic(kafka_bootstrap, topics["dead"]))


def _check_joins(run: GlobalRun) -> None:
    """Each decide member owns the same partition numbers of originals and answers in every
    assignment (range assignment over equal counts); the members alive at the end own all."""
    joined = (run.staged["ORIGINALS"], run.staged["ANSWERS"])
    owned: list[int] = []
    for n in range(2):
        text = run.logs["decide", n].read_text(errors="replace")
        assert "not co-partitioned" not in text
        assigned = [_numbers(line.split(","), joined)
                    for line in re.findall(r"partitions assigned partitions=(\S+)", text)]
        assert all(a[joined[0]] == a[joined[1]] for a in assigned), assigned
        if n > 0 or "decide" not in run.at_kill:
            owned += sorted(assigned[-1][joined[1]])
    assert sorted(owned) == list(range(6)), owned


@dataclass(frozen=True)
class Verdicts:
    """Each id's (first) output record and headers and its place in the total order, the kept
    ids, the dropped ones with the id they duplicate, and the records emitted more than once."""

    by_id: dict[str, tuple]
    order: dict[str, tuple[int, bytes]]
    kept: set[str]
    matched: dict[str, str]
    twice: int


def _check_verdicts(run: GlobalRun, lines: list[bytes]) -> Verdicts:
    """The dead letters are the BAD records; an id emitted again has its first verdict; dropped
    only as a duplicate of an earlier message, every chain ending at a kept one; no input id
    lost."""
    assert sorted({r.value for r in run.dead}) == sorted(BAD), run.dead
    by_id: dict[str, tuple] = {}
    for r in run.unique + run.dups:
        v = h.as_dict(r.headers)
        first = by_id.setdefault(id_of(r.value), (r, v))
        assert _verdict(first[1]) == _verdict(v), "two verdicts for one id"
    order = {i: _order(r) for i, (r, _) in by_id.items()}
    kept = {i for i, (_, v) in by_id.items() if v["dedup.verdict"] == "unique"}
    matched = {i: v["dedup.matched_id"] for i, (_, v) in by_id.items() if i not in kept}
    for i, m in matched.items():
        assert order[m] < order[i], f"{i} dropped as a duplicate of the later {m}"
    for i in matched:
        seen = {i}
        while i in matched:
            i = matched[i]
            assert i not in seen
            seen.add(i)
        assert i in kept
    missing = {id_of(raw) for raw in lines} - set(by_id)
    assert not missing, f"{len(missing)} input ids lost, e.g. {sorted(missing)[:5]}"
    twice = len(run.unique) + len(run.dups) + len(run.dead) - len(by_id) - len(BAD)
    return Verdicts(by_id, order, kept, matched, twice)


def test_global_scope_two_per_stage_kill9_index_then_fingerprint(kafka_bootstrap, unique_topic,
                                                                  tmp_path):
    name, lines = stream_lines(MESSAGES)
    run = _run(kafka_bootstrap, unique_topic, tmp_path, lines, ("index", "fingerprint"))
    restored = _restored(run.logs["index", 1], "index")
    _check_joins(run)
    got = _check_verdicts(run, lines)
    settings, topics = run.settings, run.topics
    kept, matched, order = got.kept, got.matched, got.order
    ids = [id_of(raw) for raw in lines]

    # Against file mode (line order), each difference explained by its pair's order or arrival.
    messages = [decode(raw, f"{name}:{n}", f"line:{n}", n, settings.input)
                for n, raw in enumerate(lines)]
    file_mode = _file_mode(settings, messages)
    file_kept = {i for i, (m, _related) in file_mode.items() if m is None}
    line_of = {m.id: n for n, m in enumerate(messages)}
    partition_of = {id_of(r.value): r.partition
                    for r in read_topic(kafka_bootstrap, topics["input"]) if r.key}
    flipped = arrival = other = 0
    for i in ids:
        if (i in kept) == (i in file_kept):
            continue
        # The messages that decide the difference: file mode's match or the message its
        # verdict found related (which ends the search), and the global scope's match.
        pairs = [m for m in (*file_mode[i], matched.get(i)) if m is not None]
        if any((line_of[m] < line_of[i]) != (order[m] < order[i]) for m in pairs):
            flipped += 1
        elif any(partition_of[m] != partition_of[i] for m in pairs):
            # One of them came from another input partition, so its probes may reach a shard
            # after this message's or before (a shard answers what it has): both arrival orders
            # are possible, and file mode saw only one.
            arrival += 1
        else:
            other += 1
            print(f"\ndecided otherwise: {i} global {matched.get(i)} file mode {file_mode[i]}")
    differences = flipped + arrival + other
    print(f"\nglobal scope: {len(ids)} messages + {len(BAD)} dead letters, 2 processes per "
          f"stage, killed {_kills(run)}; {got.twice} records emitted twice; kept {len(kept)} "
          f"(file mode {len(file_kept)}); {differences} decided differently: {flipped} the "
          f"pair's order differs, {arrival} missed by arrival order, {other} otherwise; "
          "restored by the surviving index:\n" + "\n".join(restored))
    assert other == 0


def test_global_scope_two_per_stage_kill9_decide(kafka_bootstrap, unique_topic, tmp_path):
    """A smaller run in three parts: decide-0 killed with the second part's originals waiting in
    its joins for answers; the survivor restores them (and the first part's verdicts) and
    decides them and the rest."""
    _, lines = stream_lines(DECIDE_KILL_MESSAGES)
    run = _run(kafka_bootstrap, unique_topic, tmp_path, lines, (None, "decide"))
    restored = _restored(run.logs["decide", 1], "decide")
    _check_joins(run)
    got = _check_verdicts(run, lines)
    print(f"\nglobal scope: {len(lines)} messages, killed {_kills(run)}; {got.twice} records "
          "emitted twice; restored by the surviving decide:\n" + "\n".join(restored))


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


def _file_mode(settings, messages) -> dict[str, tuple[str | None, str | None]]:
    """File mode's verdicts in line order: each id with the id it duplicates (None: kept) and
    the id it was found related to (None: none)."""
    engine = Engine(settings, MemoryStore(TABLES))
    out = {}
    size = settings.engine.batch_size
    for n in range(0, len(messages), size):
        for v in engine.process(messages[n:n + size]):
            out[v.id] = ((v.matched_id, None) if v.is_duplicate
                         else (None, v.matched_id if v.guard else None))
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
