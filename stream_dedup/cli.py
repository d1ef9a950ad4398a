"""The `stream-dedup` command line.

Exit codes: 0 done; 1 an expected failure (bad config, unreadable input, state locked), printed
as one line without a traceback; 2 bad command-line usage (argparse).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TextIO

from . import __version__
from .config import Settings, load_config
from .decode import decode
from .engine import Engine, open_engine
from .errors import StreamDedupError
from .files import read_lines
from .logs import LOG_FORMATS, configure
from .metrics import FILE_TOPIC, ServiceMetrics
from .records import DeadLetter, Message, Verdict
from .state import open_store

log = logging.getLogger(__name__)
SAMPLE = Path(__file__).parent / "data" / "sample.jsonl.gz"
KAFKA_COMMANDS = ("run", "produce", "topics", "demo", "stage")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stream-dedup",
        description="Remove repeated and near-repeated Chinese short texts from feeds.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--log-format", choices=LOG_FORMATS, default="human",
                        help="log lines for people, or one JSON object a line (default: human)")
    sub = parser.add_subparsers(dest="command", required=True)

    def with_config(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
        p.add_argument("--config", help="config.yaml (default: built-in defaults)")
        return p

    d = with_config(sub.add_parser("dedup", help="file mode: keep the unique messages of a file"))
    d.add_argument("input", nargs="?", default=str(SAMPLE),
                   help="JSONL or text file, .gz allowed, '-' for stdin (default: the sample)")
    d.add_argument("-o", "--output", default="-", help="unique records, as read (default: stdout)")
    d.add_argument("--decisions", help="write every verdict with its reason as JSONL")
    d.add_argument("--dead-letters", help="write records that could not be read as JSONL")
    d.add_argument("--state", help="state directory (overrides state.path)")
    d.add_argument("--quiet", action="store_true", help="no progress output")
    d.add_argument("--metrics-textfile", metavar="PATH",
                   help="write the Prometheus metrics to PATH (node-exporter's textfile "
                        "collector) every 10 s and at the end")

    c = with_config(sub.add_parser("check", help="compare two texts and explain the verdict"))
    c.add_argument("first")
    c.add_argument("second")

    e = with_config(sub.add_parser("eval", help="score a labelled stream"))
    e.add_argument("input", help="labelled JSONL(.gz): id, text, cluster, kind")
    e.add_argument("--compare", action="store_true",
                   help="also run the anchors (datasketch MinHashLSH, simhash package)")
    e.add_argument("--json", action="store_true", help="print one JSON object")
    e.add_argument("--state", help="state directory (default: a temporary one)")
    e.add_argument("--strategies", type=_strategies, metavar="all|NAME[,NAME...]",
                   help="a row and a distance curve per fingerprint strategy (README)")
    e.add_argument("--markdown", metavar="OUT.md", help="also write the tables as Markdown")
    e.add_argument("--plot", metavar="OUT.png",
                   help="draw precision against recall over the distance threshold "
                        "(needs --strategies)")

    f = with_config(sub.add_parser("fit", help="fit the corpus statistics some fingerprint "
                                               "strategies need (texts only, never labels)"))
    f.add_argument("input", help="JSONL or text file, .gz allowed, '-' for stdin")
    f.add_argument("-o", "--output", required=True, metavar="STATS",
                   help="statistics file to write (.npz); name it in fingerprint.stats")

    a = with_config(sub.add_parser(
        "audit", help="sample flagged pairs of an unlabelled stream for people to judge, or "
                      "score judged pairs ('audit score PAIRS.jsonl')"))
    a.add_argument("target", nargs="+", metavar="INPUT | score PAIRS",
                   help="a JSONL or text stream to sample; or 'score' and a judged pairs file")
    a.add_argument("-o", "--output", help="pairs to judge (JSONL), when sampling")
    a.add_argument("--sample", type=int, default=100, help="flagged pairs (default: 100)")
    a.add_argument("--near-misses", type=int, default=20,
                   help="pairs just under the thresholds (default: 20)")
    a.add_argument("--seed", type=int, default=1, help="sampling seed (default: 1)")
    a.add_argument("--replay", action="store_true",
                   help="with score: decide every judged flagged pair again with this config and "
                        "score those still flagged (how a new rule changes precision)")

    r = with_config(sub.add_parser("run", help="the streaming service: Kafka in, verdicts out"))
    r.add_argument("--state", help="state directory (overrides state.path)")

    p = with_config(sub.add_parser("produce", help="replay a JSONL or text file into a topic"))
    p.add_argument("input", help="JSONL or text file, .gz allowed, '-' for stdin")
    p.add_argument("--topic", help="topic (default: the first of kafka.input_topics)")
    p.add_argument("--rate", type=float, help="records a second (default: as fast as possible)")
    p.add_argument("--bootstrap", help="host:port (overrides kafka.bootstrap_servers)")

    t = sub.add_parser("topics", help="manage the configured topics")
    tsub = t.add_subparsers(dest="topics_command", required=True)
    tc = with_config(tsub.add_parser("create", help="create the input, output, duplicates and "
                                                    "dead-letter topics"))
    tc.add_argument("--partitions", type=int, help="partitions each (default: kafka.partitions)")
    tc.add_argument("--bootstrap", help="host:port (overrides kafka.bootstrap_servers)")

    g = with_config(sub.add_parser(
        "stage", help="run one member of a stage of the global scope (scale.scope: global)"))
    g.add_argument("stage", choices=("fingerprint", "index", "decide"),
                   help="fingerprint: input to probes; index: a shard group answering probes; "
                        "decide: joins answers into verdicts and routes the records")
    g.add_argument("--state", help="state directory (overrides state.path)")

    m = with_config(sub.add_parser("demo", help="start a local broker, run the service on a "
                                                "sample stream, print the summary, stop"))
    m.add_argument("--input", help="JSONL(.gz) to feed (default: ../shared/bench/"
                                   "reviews-dev.jsonl.gz if present, else the shipped sample)")
    m.add_argument("--json", action="store_true", help="end with the summary as one JSON line")
    m.add_argument("--keep-running", action="store_true",
                   help="keep the broker and service up after the summary, until Ctrl-C")
    m.add_argument("--port", type=int, default=29092,
                   help="broker port; the controller takes the next one (default: 29092)")
    m.add_argument("--rate", type=float, help="feed rate, records a second (default: full speed)")
    return parser


def _strategies(value: str) -> tuple[str, ...]:
    from .eval.compare import parse_strategies

    return parse_strategies(value)


class Progress:
    """Progress on stderr: a line updated in place on a terminal, a line every 10 s otherwise."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self.start = self.last = time.monotonic()

    def update(self, done: int, note: str = "") -> None:
        now = time.monotonic()
        if not self.enabled or now - self.last < (0.5 if self.tty else 10.0):
            return
        self.last = now
        rate = done / max(now - self.start, 1e-9)
        line = f"{done:,} messages, {rate:,.0f} msgs/s {note}"
        print(f"\r{line}" if self.tty else line, end="" if self.tty else "\n", file=sys.stderr)

    def finish(self) -> None:
        if self.enabled and self.tty:
            print(file=sys.stderr)


def _records(path: str, settings: Settings) -> Iterator[tuple[int, bytes, Message | DeadLetter]]:
    base_ms = int(time.time() * 1000)
    for number, raw in read_lines(path):
        yield number, raw, decode(raw, f"{path}:{number}", f"line:{number}", base_ms + number,
                                  settings.input)


def _batches(items: Iterator[tuple[int, bytes, Message | DeadLetter]],
             size: int) -> Iterator[list[tuple[int, bytes, Message | DeadLetter]]]:
    batch: list[tuple[int, bytes, Message | DeadLetter]] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _open_out(stack: ExitStack, path: str | None) -> TextIO | None:
    if path is None:
        return None
    if path == "-":
        return sys.stdout
    return stack.enter_context(open(path, "w", encoding="utf-8"))


def verdict_json(v: Verdict) -> dict[str, object]:
    out: dict[str, object] = {"id": v.id, "verdict": v.decision.value, "reason": v.reason}
    for key in ("matched_id", "distance", "similarity", "guard"):
        value = getattr(v, key)
        if value is not None:
            out[key] = value
    if v.replayed:
        out["replayed"] = True
    return out


def cmd_dedup(args: argparse.Namespace, settings: Settings) -> int:
    state_path = args.state or settings.state.path
    engine = open_engine(settings, state_path)
    progress = Progress(not args.quiet)
    metrics = _file_metrics(settings) if args.metrics_textfile else None
    started = time.perf_counter()
    dead = 0
    with ExitStack() as stack:
        stack.callback(engine.close)
        out = _open_out(stack, args.output)
        decisions = _open_out(stack, args.decisions)
        dead_out = _open_out(stack, args.dead_letters)
        for batch in _batches(_records(args.input, settings), settings.engine.batch_size):
            messages = [r for _, _, r in batch if isinstance(r, Message)]
            decided = engine.process(messages)
            verdicts = iter(decided)
            for number, raw, record in batch:
                if isinstance(record, DeadLetter):
                    dead += 1
                    print(f"skipped {record.source}: {record.reason}", file=sys.stderr)
                    if dead_out:
                        dead_out.write(json.dumps({"source": record.source, "line": number,
                                                   "reason": record.reason,
                                                   "raw": raw.decode("utf-8", "replace")},
                                                  ensure_ascii=False) + "\n")
                    continue
                verdict = next(verdicts)
                if not verdict.is_duplicate and out:
                    out.write(raw.decode("utf-8") + "\n")
                if decisions:
                    decisions.write(json.dumps(verdict_json(verdict), ensure_ascii=False) + "\n")
            progress.update(engine.stats.messages + dead)
            if metrics:
                metrics.observe_batch(engine, decided, len(batch) - len(messages),
                                      {FILE_TOPIC: len(batch)})
                metrics.write_textfile(args.metrics_textfile, every_s=10.0)
        progress.finish()
        if metrics:
            metrics.refresh_state(engine)
            metrics.write_textfile(args.metrics_textfile)
    elapsed = time.perf_counter() - started
    stats = engine.stats
    bloom = engine.exact.bloom
    total = stats.messages + dead
    dups = stats.decisions["exact"] + stats.decisions["near"]
    print(
        f"{total:,} records: {stats.decisions['unique']:,} unique, {stats.decisions['exact']:,} "
        f"exact, {stats.decisions['near']:,} near, {dead:,} dead letters, "
        f"{stats.replayed:,} replayed; dedup rate {dups / max(stats.messages, 1):.1%}; "
        f"{total / max(elapsed, 1e-9):,.0f} msgs/s; Bloom filter {bloom.fill_ratio():.1%} full, "
        f"estimated false-positive rate {bloom.estimated_fpr():.2g}",
        file=sys.stderr,
    )
    return 0


def _file_metrics(settings: Settings) -> ServiceMetrics:
    from prometheus_client import CollectorRegistry

    return ServiceMetrics(CollectorRegistry(), settings, topics=(FILE_TOPIC,),
                          process_metrics=False)


def cmd_check(args: argparse.Namespace, settings: Settings) -> int:
    from dataclasses import replace

    from .fingerprint import Batch, simhash
    from .index.layout import hamming
    from .meaning import classify
    from .normalize import Normalizer
    from .verify import similarity

    settings = replace(settings, state=replace(settings.state, backend="memory"))
    norm = Normalizer(settings.normalize)
    a, b = (norm.normalize(t) for t in (args.first, args.second))
    fps = simhash(Batch.of([a, b]), settings.fingerprint.ngram)
    engine = Engine(settings, open_store("memory", ""))
    verdict = engine.process([Message("first", args.first, 0), Message("second", args.second, 1)])
    score, _, _ = similarity(a, b, settings.verify)
    for label, text, fp in zip(("first", "second"), (a, b), fps, strict=True):
        print(f"{label:>8}: {text}\n{'':>8}  simhash {int(fp):016x}")
    print(f"distance: {int(hamming(fps[0], fps[1]))} bits, similarity: {score:.3f}")
    spans = classify(a, b) if a != b else []
    if spans:
        print("   spans:")
    for span in spans:
        mark = "  meaning change" if span.changes_meaning else ""
        print(f"          {span.op:<7} {a[span.i1:span.i2] or '-'} -> {b[span.j1:span.j2] or '-'}"
              f"  [{span.kind}]{mark}")
    print(f" verdict: {verdict[1].decision.value} ({verdict[1].reason})")
    return 0


def cmd_eval(args: argparse.Namespace, settings: Settings) -> int:
    from .eval.command import run_eval

    return run_eval(args, settings)


def cmd_fit(args: argparse.Namespace, settings: Settings) -> int:
    from .normalize import Normalizer
    from .strategies.fit import fit

    normalizer = Normalizer(settings.normalize)
    progress = Progress(True)
    texts: list[str] = []
    for batch in _batches(_records(args.input, settings), settings.engine.batch_size):
        texts += normalizer.normalize_batch([r.text for _, _, r in batch
                                             if isinstance(r, Message)])
        progress.update(len(texts), "read")
    progress.finish()
    stats = fit(texts, settings.fingerprint.top_m, lambda step, done, total: print(
        f"{step}: {done:,}/{total:,}", file=sys.stderr))
    stats.save(args.output)
    print(f"{stats.docs:,} texts, {len(stats.words):,} words, {len(stats.pair_keys):,} word "
          f"pairs -> {args.output} (set fingerprint.stats: {args.output})", file=sys.stderr)
    return 0


def _with_bootstrap(settings: Settings, bootstrap: str | None) -> Settings:
    from dataclasses import replace

    if not bootstrap:
        return settings
    return replace(settings, kafka=replace(settings.kafka, bootstrap_servers=bootstrap))


def cmd_audit(args: argparse.Namespace, settings: Settings) -> int:
    from . import audit

    if args.target[0] == "score":
        if len(args.target) != 2:
            build_parser().error("usage: stream-dedup audit score PAIRS.jsonl")
        pairs = audit.read_pairs(args.target[1])
        if args.replay:
            pairs = audit.still_flagged(pairs, settings)
        for group, rows in audit.score(pairs).items():
            for key, precision in rows.items():
                print(f"{group:>7}  {key:<16} precision {precision}")
        return 0
    if len(args.target) != 1 or not args.output:
        build_parser().error("usage: stream-dedup audit INPUT -o PAIRS.jsonl")
    progress = Progress(True)
    pairs, counts = audit.sample_pairs(args.target[0], settings, args.sample, args.near_misses,
                                       args.seed, progress.update)
    progress.finish()
    audit.write_pairs(pairs, args.output)
    print(f"{counts['messages']:,} messages, {counts['flagged']:,} flagged, "
          f"{counts['near_misses']:,} near misses; wrote {len(pairs)} pairs to {args.output}",
          file=sys.stderr)
    return 0


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    from .kafka.run import serve

    serve(settings, args.state)
    return 0


def cmd_stage(args: argparse.Namespace, settings: Settings) -> int:
    from dataclasses import replace

    from .scale.stages import check_scope, run_stage

    check_scope(settings)
    if args.state:
        settings = replace(settings, state=replace(settings.state, path=args.state))
    if args.stage == "fingerprint":
        from .scale.fingerprint_stage import FingerprintStage as make
    elif args.stage == "index":
        from .scale.index_stage import IndexStage as make
    else:
        from .scale.decide_stage import DecideStage as make
    run_stage(settings, make(settings))
    return 0


def cmd_produce(args: argparse.Namespace, settings: Settings) -> int:
    from .kafka.produce import produce_file

    k = _with_bootstrap(settings, args.bootstrap).kafka
    topic = args.topic or k.input_topics[0]
    sent = produce_file(args.input, topic, k, settings.input.id_field,
                        args.rate, lambda n: print(f"{n:,} records sent", file=sys.stderr))
    print(f"{sent.records:,} records to {topic} in {sent.seconds:.1f} s "
          f"({sent.rate:,.0f} records/s)", file=sys.stderr)
    return 0


def cmd_topics(args: argparse.Namespace, settings: Settings) -> int:
    from .kafka.topics import create_topics

    k = _with_bootstrap(settings, args.bootstrap).kafka
    t = settings.topology
    staged = {t.probes_topic: t.probes_partitions, t.answers_topic: t.join_partitions,
              t.originals_topic: t.join_partitions} if settings.scale.scope == "global" else {}
    for name, status in create_topics(k, args.partitions, staged).items():
        print(f"{name}: {status}")
    return 0


def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    from .kafka.demo import default_input, run_demo

    run_demo(settings, args.config, Path(args.input) if args.input else default_input(),
             args.port, args.keep_running, args.rate, args.json, sys.stdout, sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure(args.log_format)
    try:
        settings = load_config(args.config)
        handler = {"dedup": cmd_dedup, "check": cmd_check, "eval": cmd_eval, "fit": cmd_fit,
                   "run": cmd_run,
                   "audit": cmd_audit,
                   "produce": cmd_produce, "topics": cmd_topics, "demo": cmd_demo,
                   "stage": cmd_stage}[args.command]
        if args.command in KAFKA_COMMANDS:
            from .kafka.run import quiet_kafka_logs

            quiet_kafka_logs()
        return handler(args, settings)
    except StreamDedupError as exc:
        print(f"stream-dedup: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("stream-dedup: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
