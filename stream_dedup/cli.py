"""The `stream-dedup` command line.

Exit codes: 0 done; 1 an expected failure (bad config, unreadable input, state locked), printed
as one line without a traceback; 2 bad command-line usage (argparse).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TextIO

from . import __version__
from .config import Settings, load_config
from .decode import decode
from .docs import seq_key
from .engine import Engine, open_engine
from .errors import StreamDedupError
from .files import count_lines, read_lines
from .logs import LOG_FORMATS, configure
from .metrics import FILE_TOPIC, ServiceMetrics
from .records import DeadLetter, Message, Verdict
from .state import open_store

log = logging.getLogger(__name__)
SAMPLE = Path(__file__).parent / "data" / "sample.jsonl.gz"
KAFKA_COMMANDS = ("run", "produce", "topics", "demo", "stage")


ENV_HELP = """\
settings: config.yaml documents every key with its default; --config FILE loads yours (keys left
out keep their defaults). Any key can also be set from the environment, which wins over the file:
STREAM_DEDUP__<SECTION>__<KEY>=value (double underscores between the parts, values read as YAML).
"""

RUN_SETTINGS = """\
the settings that matter most:
  kafka.bootstrap_servers   the brokers, host:port[,host:port...]
  kafka.input_topics        topics read (a YAML list)
  kafka.output_topic        unique records, as read
  kafka.duplicates_topic    duplicates with their verdict headers (null: dropped)
  kafka.dead_letter_topic   records that could not be read
  kafka.group_id            consumer group; every replica of one service shares it
  kafka.security_protocol   PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (with kafka.sasl_*)
  state.path                the RocksDB state directory (keep it on a persistent volume)
  window.seconds            how long a message stays a candidate for later ones
  metrics.port              Prometheus /metrics, /healthz, /readyz (0: off)

environment overrides, for containers:
  STREAM_DEDUP__KAFKA__BOOTSTRAP_SERVERS=broker-1:9092,broker-2:9092
  STREAM_DEDUP__KAFKA__INPUT_TOPICS='[comments]'
  STREAM_DEDUP__KAFKA__GROUP_ID=stream-dedup-comments
  STREAM_DEDUP__STATE__PATH=/data/state
"""


def _command(sub: argparse._SubParsersAction, name: str, summary: str, description: str,
             example: str, config: bool = True, epilog: str = "") -> argparse.ArgumentParser:
    """A subcommand whose help says what it does, its arguments and one example."""
    p = sub.add_parser(name, help=summary, description=description, epilog=(
        f"example:\n  {example}\n" + (f"\n{epilog}" if epilog else "")),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    if config:
        p.add_argument("--config", metavar="FILE",
                       help="config.yaml to load (default: the built-in defaults, which "
                            "config.yaml in the repository lists)")
    return p


def _add_dedup(sub: argparse._SubParsersAction) -> None:
    d = _command(
        sub, "dedup", "file mode: keep the unique messages of a file",
        "Read a JSONL or text file, write the records that are not repeats of an earlier one.\n\n"
        "Each run starts from an empty temporary state, removed at exit, so the verdicts of\n"
        "one file never depend on an earlier run. --state DIR keeps the state instead; a DIR\n"
        "that already holds messages is refused unless --resume says to continue that run\n"
        "(then the new file is compared with the earlier messages too, and a repeated id gets\n"
        "its first verdict again).",
        "stream-dedup dedup comments.jsonl.gz -o unique.jsonl --decisions verdicts.jsonl",
        epilog=ENV_HELP)
    d.add_argument("input", nargs="?", default=str(SAMPLE),
                   help="JSONL or text file, .gz allowed, '-' for stdin (default: the shipped "
                        "sample stream)")
    d.add_argument("-o", "--output", default="-", help="unique records, as read (default: stdout)")
    d.add_argument("--decisions", metavar="FILE",
                   help="write every verdict with its reason as JSONL")
    d.add_argument("--dead-letters", metavar="FILE",
                   help="write records that could not be read as JSONL")
    d.add_argument("--state", metavar="DIR",
                   help="keep the state in DIR (default: a temporary one, removed at exit)")
    d.add_argument("--resume", action="store_true",
                   help="with --state: continue the run whose messages DIR holds")
    d.add_argument("--quiet", action="store_true", help="no progress output")
    d.add_argument("--metrics-textfile", metavar="PATH",
                   help="write the Prometheus metrics to PATH (node-exporter's textfile "
                        "collector) every 10 s and at the end")


def _add_check(sub: argparse._SubParsersAction) -> None:
    c = _command(
        sub, "check", "compare two texts and explain the verdict",
        "Decide the second text against the first, as the service would, and show why:\n"
        "the normalized texts, their Simhash fingerprints and distance, the similarity, the\n"
        "differing spans with their meaning class, and the verdict with its reason.",
        "stream-dedup check '深市今天上涨了百分之三' '深市昨天上涨了百分之三'")
    c.add_argument("first", help="the earlier text")
    c.add_argument("second", help="the later text, decided against the first")


def _add_eval(sub: argparse._SubParsersAction) -> None:
    e = _command(
        sub, "eval", "score a labelled stream",
        "Run the engine over a labelled stream and print precision, recall and F1 of the\n"
        "duplicate verdicts, by kind of duplicate; optionally against the anchors and per\n"
        "fingerprint strategy.",
        "stream-dedup eval bench/data/meaning.jsonl.gz")
    e.add_argument("input", help="labelled JSONL(.gz): id, text, cluster, kind")
    e.add_argument("--compare", action="store_true",
                   help="also run the anchors (datasketch MinHashLSH, simhash package)")
    e.add_argument("--json", action="store_true", help="print one JSON object")
    e.add_argument("--state", metavar="DIR", help="state directory (default: a temporary one)")
    e.add_argument("--strategies", type=_strategies, metavar="all|NAME[,NAME...]",
                   help="a row and a distance curve per fingerprint strategy (docs: strategies)")
    e.add_argument("--markdown", metavar="OUT.md", help="also write the tables as Markdown")
    e.add_argument("--plot", metavar="OUT.png",
                   help="draw precision against recall over the distance threshold "
                        "(needs --strategies)")


def _add_fit(sub: argparse._SubParsersAction) -> None:
    f = _command(
        sub, "fit", "fit the corpus statistics some fingerprint strategies need",
        "Count word and word-pair statistics over a stream's texts (never its labels) for\n"
        "the tfidf, weighted, p-simhash and e-simhash strategies (fingerprint.stats).",
        "stream-dedup fit comments.jsonl.gz -o stats.npz")
    f.add_argument("input", help="JSONL or text file, .gz allowed, '-' for stdin")
    f.add_argument("-o", "--output", required=True, metavar="STATS",
                   help="statistics file to write (.npz); name it in fingerprint.stats")


def _add_audit(sub: argparse._SubParsersAction) -> None:
    a = _command(
        sub, "audit", "sample flagged pairs for people to judge, or score judged pairs",
        "Without labels, precision is measured by people: 'audit INPUT -o PAIRS.jsonl' samples\n"
        "flagged pairs and near misses to judge (fill in each pair's label); 'audit score\n"
        "PAIRS.jsonl' prints the precision of the judged pairs.",
        "stream-dedup audit comments.jsonl.gz -o pairs.jsonl --sample 200")
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


def _add_run(sub: argparse._SubParsersAction) -> None:
    r = _command(
        sub, "run", "the streaming service: Kafka in, verdicts out",
        "Consume the input topics, decide every record, produce unique records to the output\n"
        "topic, duplicates (with their verdict headers) to the duplicates topic and unreadable\n"
        "records to the dead-letter topic, then commit the offsets. Runs until SIGTERM or\n"
        "Ctrl-C; state survives restarts in state.path.",
        "stream-dedup run --config my-cluster.yaml",
        epilog=RUN_SETTINGS + "\n" + ENV_HELP)
    r.add_argument("--state", metavar="DIR", help="state directory (overrides state.path)")


def _add_produce(sub: argparse._SubParsersAction) -> None:
    p = _command(
        sub, "produce", "replay a JSONL or text file into a topic",
        "Send each line of a file as one record (its id field as the key), to feed the\n"
        "service for a test or a replay.",
        "stream-dedup produce comments.jsonl.gz --bootstrap 127.0.0.1:9092 --rate 2000")
    p.add_argument("input", help="JSONL or text file, .gz allowed, '-' for stdin")
    p.add_argument("--topic", help="topic (default: the first of kafka.input_topics)")
    p.add_argument("--rate", type=float, help="records a second (default: as fast as possible)")
    p.add_argument("--bootstrap", metavar="HOST:PORT",
                   help="brokers (overrides kafka.bootstrap_servers)")


def _add_topics(sub: argparse._SubParsersAction) -> None:
    t = _command(
        sub, "topics", "manage the configured topics",
        "Create the topics the service reads and writes, as config.yaml names them.",
        "stream-dedup topics create --config my-cluster.yaml --partitions 12", config=False)
    tsub = t.add_subparsers(dest="topics_command", required=True, metavar="create")
    tc = _command(
        tsub, "create", "create the input, output, duplicates and dead-letter topics",
        "Create the input, output, duplicates and dead-letter topics (and, with scale.scope\n"
        "global, the stage topics); topics that exist are left as they are.",
        "stream-dedup topics create --bootstrap 127.0.0.1:9092 --partitions 6")
    tc.add_argument("--partitions", type=int, help="partitions each (default: kafka.partitions)")
    tc.add_argument("--bootstrap", metavar="HOST:PORT",
                    help="brokers (overrides kafka.bootstrap_servers)")


def _add_stage(sub: argparse._SubParsersAction) -> None:
    g = _command(
        sub, "stage", "run one member of a stage of the global scope",
        "With scale.scope: global the work is split into three stages linked by topics;\n"
        "each process runs one member of one stage (docs: scaling).",
        "stream-dedup stage index --config global.yaml --state /data/index-0")
    g.add_argument("stage", choices=("fingerprint", "index", "decide"),
                   help="fingerprint: input to probes; index: a shard group answering probes; "
                        "decide: joins answers into verdicts and routes the records")
    g.add_argument("--state", metavar="DIR", help="state directory (overrides state.path)")


def _add_demo(sub: argparse._SubParsersAction) -> None:
    m = _command(
        sub, "demo", "the whole streaming job on this machine, then a summary",
        "Start a local Kafka broker (installing Java and Maven with apt-get when missing),\n"
        "run the service on a stream, print what went through and how fast, and remove\n"
        "everything it made. Ports already taken are skipped, so demos can run side by side.",
        "stream-dedup demo --input comments.jsonl.gz")
    m.add_argument("--input", metavar="FILE",
                   help="JSONL(.gz) to feed (default: the shipped sample stream)")
    m.add_argument("--json", action="store_true", help="end with the summary as one JSON line")
    m.add_argument("--keep-running", action="store_true",
                   help="keep the broker and service up after the summary, until Ctrl-C")
    m.add_argument("--port", type=int, default=29092,
                   help="broker port, or the first free one above it; the controller takes "
                        "the next free one (default: 29092)")
    m.add_argument("--rate", type=float, help="feed rate, records a second (default: full speed)")


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: one builder per subcommand."""
    parser = argparse.ArgumentParser(
        prog="stream-dedup",
        description="Remove repeated and near-repeated Chinese short texts from feeds.",
        epilog="example:\n  stream-dedup dedup comments.jsonl -o unique.jsonl\n\n"
               "'stream-dedup COMMAND --help' explains each command.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--log-format", choices=LOG_FORMATS, default="human",
                        help="log lines for people, or one JSON object a line (default: human)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_add_dedup, _add_check, _add_eval, _add_fit, _add_audit, _add_run, _add_produce,
                _add_topics, _add_stage, _add_demo):
        add(sub)
    return parser


def _strategies(value: str) -> tuple[str, ...]:
    from .eval.compare import parse_strategies

    return parse_strategies(value)


class Progress:
    """Progress on stderr: a bar with the rate and the time left on a terminal (tqdm), a line
    every 10 s otherwise, so a long run shows it is moving either way."""

    def __init__(self, enabled: bool, total: int | None = None, unit: str = "msg") -> None:
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self.start = self.last = time.monotonic()
        self.done = 0
        self.bar = None
        if enabled and self.tty:
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit=unit, unit_scale=True, file=sys.stderr,
                            smoothing=0.1, dynamic_ncols=True)

    def update(self, done: int, note: str = "") -> None:
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.update(done - self.done)
            self.done = done
            if note:
                self.bar.set_postfix_str(note, refresh=False)
            return
        now = time.monotonic()
        if now - self.last < 10.0:
            return
        self.last = now
        rate = done / max(now - self.start, 1e-9)
        print(f"{done:,} messages, {rate:,.0f} msgs/s {note}".rstrip(), file=sys.stderr)

    def say(self, text: str) -> None:
        """A line on stderr that does not tear the bar."""
        if self.bar is not None:
            self.bar.write(text, file=sys.stderr)
        else:
            print(text, file=sys.stderr)

    def finish(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


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


def _file_state(args: argparse.Namespace, stack: ExitStack) -> str:
    """The state directory of a file-mode run: a fresh temporary one removed at exit, or
    `--state DIR`, refused when DIR already holds messages unless `--resume` says so, because
    their ids would get their stored verdicts back and their texts would count as earlier
    messages, which a run over another file does not expect."""
    if args.state is None:
        if args.resume:
            raise StreamDedupError("--resume needs --state DIR: the state of the run to continue")
        return stack.enter_context(tempfile.TemporaryDirectory(prefix="stream-dedup-state-"))
    return args.state


def _refuse_used_state(args: argparse.Namespace, engine: Engine) -> None:
    """Raise unless the state is empty, or `--resume` was given for a kept one."""
    if args.state is None or args.resume:
        return
    if next(iter(engine.store.scan("docs", seq_key(0), seq_key(2**64 - 1))), None) is not None:
        raise StreamDedupError(
            f"state {args.state} already holds the messages of an earlier run: their ids would "
            "get their stored verdicts back and their texts would count as earlier messages. "
            "Add --resume to continue that run, or give an empty --state directory (or none: "
            "a temporary state)")


def _progress_total(path: str, enabled: bool) -> int | None:
    """Lines of the input, counted first for the bar's time left (only on a terminal)."""
    if not enabled or not sys.stderr.isatty() or path == "-":
        return None
    return count_lines(path)


def cmd_dedup(args: argparse.Namespace, settings: Settings) -> int:
    with ExitStack() as state_stack:
        state_path = _file_state(args, state_stack)
        engine = open_engine(settings, state_path)
        try:
            _refuse_used_state(args, engine)
        except StreamDedupError:
            engine.close()
            raise
        return _dedup(args, settings, engine)


def _dedup(args: argparse.Namespace, settings: Settings, engine: Engine) -> int:
    progress = Progress(not args.quiet, _progress_total(args.input, not args.quiet))
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
                    progress.say(f"skipped {record.source}: {record.reason}")
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
        f"{total / max(elapsed, 1e-9):,.0f} msgs/s over {elapsed:.1f} s (reading and writing "
        f"included); Bloom filter {bloom.fill_ratio():.1%} full, "
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
    (a, b), (_, clauses) = norm.with_clauses([args.first, args.second])
    fps = simhash(Batch.of([a, b]), settings.fingerprint.ngram)
    engine = Engine(settings, open_store("memory", ""))
    verdict = engine.process([Message("first", args.first, 0), Message("second", args.second, 1)])
    score, _, _ = similarity(a, b, settings.verify)
    for label, text, fp in zip(("first", "second"), (a, b), fps, strict=True):
        print(f"{label:>8}: {text}\n{'':>8}  simhash {int(fp):016x}")
    print(f"distance: {int(hamming(fps[0], fps[1]))} bits, similarity: {score:.3f}")
    spans = classify(a, b, None, clauses) if a != b else []
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
