"""The `stream-dedup` command line's parser: one builder per subcommand, each with its help
and an example."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import __version__
from ..ops.logs import LOG_FORMATS

SAMPLE = Path(__file__).parents[1] / "data" / "sample.jsonl.gz"


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


def _add_bulk_load(sub: argparse._SubParsersAction) -> None:
    b = _command(
        sub, "bulk-load", "build a new state from a window of history",
        "Store the messages of a JSONL or text file (the window before the service starts) in\n"
        "a new state directory, as the engine would have stored them, without deciding them\n"
        "again: repeats of an earlier text are stored as its exact duplicates, every other\n"
        "message goes into the index. The tables go in as sorted SST files (RocksDB's bulk\n"
        "load), minutes for tens of millions of messages. Start `stream-dedup run` on the\n"
        "directory (state.path) with the same index settings afterwards.",
        "stream-dedup bulk-load last-24h.jsonl.gz --state /data/state", epilog=ENV_HELP)
    b.add_argument("input", help="JSONL or text file, .gz allowed, '-' for stdin")
    b.add_argument("--state", metavar="DIR", required=True,
                   help="the state directory to build (empty or absent)")
    b.add_argument("--quiet", action="store_true", help="no progress output")


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
    e.add_argument("--runs", type=_positive, default=1, metavar="N",
                   help="with --compare: run the comparison N times and print each speed "
                        "ratio's min, median and max over the runs (default: 1)")
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


def _add_inspect(sub: argparse._SubParsersAction) -> None:
    i = _command(
        sub, "inspect", "look at a file run's verdicts, or judge an audit sample, in a browser",
        "Serve the inspector's pages for a file run: the verdicts of 'dedup --decisions FILE'\n"
        "(with --input, the texts of the run's input, so each pair is shown side by side), the\n"
        "check form, and with --audit an audit sample to judge, each label written back to the\n"
        "file. The port, TLS and basic auth are the metrics port's (metrics.* keys); runs until\n"
        "Ctrl-C.",
        "stream-dedup inspect verdicts.jsonl --input comments.jsonl.gz --port 9109")
    i.add_argument("decisions", nargs="?", help="decisions JSONL of `stream-dedup dedup`")
    i.add_argument("--input", metavar="FILE", help="the input of that run, for the texts")
    i.add_argument("--audit", metavar="PAIRS", help="an `audit -o` file to judge")
    i.add_argument("--port", type=int, help="port (default: metrics.port; 0: any free one)")
    i.add_argument("--address", help="address to listen on (default: metrics.address)")


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
    for add in (_add_dedup, _add_bulk_load, _add_check, _add_eval, _add_fit, _add_audit,
                _add_inspect, _add_run, _add_produce, _add_topics, _add_stage, _add_demo):
        add(sub)
    return parser


def _positive(value: str) -> int:
    """A whole number of at least 1, for argparse."""
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {value!r}")
    return number


def _strategies(value: str) -> tuple[str, ...]:
    from ..tools.eval.compare import parse_strategies

    return parse_strategies(value)

