"""The commands that read files: `dedup`, `check`, `eval`, `fit` and `audit`."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from dataclasses import replace
from typing import TYPE_CHECKING, TextIO

from ..config import Settings
from ..decode import decode
from ..engine.batch import Engine, open_engine
from ..engine.stored import seq_key
from ..errors import StreamDedupError
from ..files import Lines, count_lines
from ..records import DeadLetter, Message, Verdict
from .parser import build_parser

if TYPE_CHECKING:
    from ..ops.metrics import ServiceMetrics

# The `topic` label of the records a file run reads, in its metrics (`--metrics-textfile`; the
# metrics module is imported only then: a tenth of a second of a short run's start).
FILE_TOPIC = "file"
# Records, and bytes, of an input up to which a run without --state keeps its state in memory
# (`_file_state`).
MEMORY_STATE_RECORDS = 50_000
MEMORY_STATE_BYTES = 64 << 20
Record = tuple[int, bytes, Message | DeadLetter]  # line number, the line, what it decoded to


class Progress:
    """Progress on stderr: a bar with the rate and the time left on a terminal (tqdm), a line
    every 10 s otherwise, so a long run shows it is moving either way."""

    def __init__(self, enabled: bool, total: int | None = None, unit: str = "msg",
                 noun: str = "messages") -> None:
        self.enabled = enabled
        self.noun = noun
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
        print(f"{done:,} {self.noun}, {rate:,.0f}/s {note}".rstrip(), file=sys.stderr)

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


def _records(path: str, settings: Settings,
             lines: Iterable[tuple[int, bytes]] | None = None) -> Iterator[Record]:
    """The decoded records of `path`, or of its `lines` read already."""
    base_ms = int(time.time() * 1000)
    for number, raw in Lines(path) if lines is None else lines:
        yield number, raw, decode(raw, f"{path}:{number}", f"line:{number}", base_ms + number,
                                  settings.input)


def _batches(items: Iterator[Record], size: int) -> Iterator[list[Record]]:
    batch: list[Record] = []
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


def _file_state(args: argparse.Namespace, stack: ExitStack, settings: Settings,
                lines: Lines) -> tuple[str, Settings]:
    """The state of a file-mode run and the settings to open it with. `--state DIR` is used as
    it is, refused when DIR already holds messages unless `--resume` says so, because their ids
    would get their stored verdicts back and their texts would count as earlier messages, which
    a run over another file does not expect. Without it the state is a fresh temporary one: in
    memory when the input file has at most `MEMORY_STATE_RECORDS` lines in
    `MEMORY_STATE_BYTES` (read ahead: opening, writing and closing RocksDB then cost more than
    the state's dicts take, ~1.4 KB a message), else a temporary directory removed at exit
    (standard input too: a pipe's first lines are decided as they come, not held back)."""
    if args.state is not None:
        return args.state, settings
    if args.resume:
        raise StreamDedupError("--resume needs --state DIR: the state of the run to continue")
    if args.input != "-" and lines.ahead(MEMORY_STATE_RECORDS, MEMORY_STATE_BYTES) is not None:
        return "", replace(settings, state=replace(settings.state, backend="memory"))
    return stack.enter_context(tempfile.TemporaryDirectory(prefix="stream-dedup-state-")), settings


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


def _progress_total(path: str, enabled: bool, known: int | None = None) -> int | None:
    """Lines of the input for the bar's time left (only on a terminal): `known` when it was
    read ahead, else counted first."""
    if not enabled or not sys.stderr.isatty() or path == "-":
        return None
    return known if known is not None else count_lines(path)


def cmd_dedup(args: argparse.Namespace, settings: Settings) -> int:
    started = time.perf_counter()
    with ExitStack() as state_stack:
        lines = state_stack.enter_context(Lines(args.input))
        state_path, settings = _file_state(args, state_stack, settings, lines)
        # Loaded when a batch first needs them: a short file pays for no more than it uses.
        engine = open_engine(settings, state_path, warm=False)
        try:
            _refuse_used_state(args, engine)
        except StreamDedupError:
            engine.close()
            raise
        return _dedup(args, settings, engine, lines, started)


def _dedup(args: argparse.Namespace, settings: Settings, engine: Engine, lines: Lines,
           started: float) -> int:
    progress = Progress(not args.quiet, _progress_total(args.input, not args.quiet, lines.total))
    metrics = _file_metrics(settings) if args.metrics_textfile else None
    dead = 0
    with ExitStack() as stack:
        stack.callback(engine.close, keep=args.state is not None)
        out = _open_out(stack, args.output)
        decisions = _open_out(stack, args.decisions)
        dead_out = _open_out(stack, args.dead_letters)
        tried: dict[str, list[str]] = {}  # the candidates of each message the index saw
        if decisions:
            engine.on_candidates = tried.__setitem__
        for batch in _batches(_records(args.input, settings, lines),
                              settings.engine.batch_size):
            messages = [r for _, _, r in batch if isinstance(r, Message)]
            tried.clear()
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
                    row = verdict_json(verdict)
                    if verdict.id in tried:
                        row["candidates"] = tried[verdict.id]
                    decisions.write(json.dumps(row, ensure_ascii=False) + "\n")
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

    from ..ops.metrics import ServiceMetrics

    return ServiceMetrics(CollectorRegistry(), settings, topics=(FILE_TOPIC,),
                          process_metrics=False)


def cmd_check(args: argparse.Namespace, settings: Settings) -> int:
    from ..tools.explain import explain

    e = explain(args.first, args.second, settings)
    for label, text, fp in zip(("first", "second"), (e.first, e.second), e.fingerprints,
                               strict=True):
        print(f"{label:>8}: {text}\n{'':>8}  simhash {fp:016x}")
    print(f"distance: {e.distance} bits, similarity: {e.similarity:.3f}")
    if e.spans:
        print("   spans:")
    a, b = e.first, e.second
    for span in e.spans:
        mark = "  meaning change" if span.changes_meaning else ""
        print(f"          {span.op:<7} {a[span.i1:span.i2] or '-'} -> {b[span.j1:span.j2] or '-'}"
              f"  [{span.kind}]{mark}")
    print(f" verdict: {e.verdict.decision.value} ({e.verdict.reason})")
    return 0


def cmd_eval(args: argparse.Namespace, settings: Settings) -> int:
    from ..tools.eval.command import run_eval

    return run_eval(args, settings)


def cmd_fit(args: argparse.Namespace, settings: Settings) -> int:
    from ..engine.normalize import Normalizer
    from ..engine.strategies.fit import fit

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


def cmd_audit(args: argparse.Namespace, settings: Settings) -> int:
    from ..tools import audit

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

