"""Fuzz the decoding, normalization and engine with hostile records at scale.

    python -m stream_dedup.tools.fuzz --count 1000000 [--seed 1] [--corpus tests/data/fuzz]

Each generated record goes through `decode` (with small configured limits) and, when it becomes a
message, through the engine (normalization, fingerprints, index, verification) in batches. The
only allowed outcomes are a dead letter with a reason or a verdict with a reason. Anything else
(an exception, a verdict without a reason, a message over `input.max_chars`, a record slower than
`--max-ms` to decode) is a failure: it is printed, saved to the corpus folder, and the exit status
is 1. Interesting cases (the first record of each new outcome class, the slowest records) are kept
in the corpus folder as one JSON line each; `tests/property/test_fuzz_corpus.py` replays them.

The generators mirror the hypothesis strategies of `tests/property/test_fuzz_input.py` (random
bytes, hostile text with invalid surrogates, control characters, emoji and combining-mark runs,
arbitrary JSON, deep arrays and objects, records at and over the size limit) plus byte mutations
of corpus cases, with a seeded `random.Random`, so a million inputs take minutes, not hours.
The engine is recreated every `--engine-every` messages so memory stays bounded by the window.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import re
import resource
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

from ..config import InputSettings, Settings
from ..decode import decode
from ..engine.batch import Engine
from ..engine.stored import TABLES
from ..records import DeadLetter, Message, Verdict
from ..state import MemoryStore

LIMITS = InputSettings(max_bytes=4096, max_chars=2000, max_json_depth=16)
CORPUS_FILE = "corpus.jsonl"
HOSTILE = ["😂", "👍🏻", "\u0301", "\u0338", "\u200b", "\u200d", "\ufeff", "\u202e", "\x00",
           "\x1b", "\x7f", "\ud800", "\udfff", "啊", "蘇", "１", "[", "]", "#", "@", "/", "<",
           ">", "&", ";", "【", "】", "http://t.cn/", "\n", "\r", "\t", " ", "\u3000"]
CJK = "今天股市上涨下跌北京上海新闻报道记者不是没有转发微博图片视频"


def _text(rng: random.Random, n: int) -> str:
    kind = rng.random()
    if kind < 0.4:
        return "".join(rng.choice(HOSTILE) for _ in range(n))
    if kind < 0.6:
        return "".join(chr(rng.randrange(0x110000)) for _ in range(n))
    if kind < 0.8:
        return "".join(rng.choice(CJK) for _ in range(n))
    run = rng.choice(["😂", "\u0301", "\u200b", "#", "@", "【"])
    return rng.choice(CJK) + run * n + rng.choice(CJK)


def _json_value(rng: random.Random, depth: int = 0) -> object:
    r = rng.random()
    if depth > 4 or r < 0.5:
        return rng.choice([None, True, False, rng.randrange(-2**63, 2**63), rng.random() * 1e300,
                           _text(rng, rng.randrange(0, 50))])
    if r < 0.75:
        return [_json_value(rng, depth + 1) for _ in range(rng.randrange(5))]
    return {_text(rng, rng.randrange(9)): _json_value(rng, depth + 1)
            for _ in range(rng.randrange(5))}


def _as_bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _gen_binary(rng: random.Random) -> bytes:
    return rng.randbytes(rng.randrange(600))


def _gen_text(rng: random.Random) -> bytes:
    return _as_bytes(_text(rng, rng.choice([rng.randrange(300), rng.randrange(3000)])))


def _gen_json(rng: random.Random) -> bytes:
    obj = {"text": _json_value(rng) if rng.random() < 0.3 else _text(rng, rng.randrange(200)),
           "id": rng.choice(["x", rng.randrange(10**6), None, [], _text(rng, 5)])}
    if rng.random() < 0.3:
        obj["d"] = _json_value(rng)
    return _as_bytes(json.dumps(obj, ensure_ascii=rng.random() < 0.5))


def _gen_deep(rng: random.Random) -> bytes:
    n = rng.randrange(1, 5000)
    return rng.choice([("[" * n + "]" * n), ('{"a":' * n + '"x"' + "}" * n),
                       ('{"text": "t", "d": ' + "[" * n + "]" * n + "}"),
                       ('{"text": "t", "d": ' + "[" * n)]).encode()


def _gen_sized(rng: random.Random) -> bytes:
    n = LIMITS.max_bytes + rng.randrange(-3, 4)
    body = rng.choice(["啊", "a", "😂", "\u0301"])
    text = body * (n // len(body.encode()))
    return _as_bytes(rng.choice([text, json.dumps({"text": text}, ensure_ascii=False)]))[:n + 2]


GENERATORS: list[Callable[[random.Random], bytes]] = [
    _gen_binary, _gen_text, _gen_json, _gen_deep, _gen_sized]


def _mutate(rng: random.Random, raw: bytes) -> bytes:
    data = bytearray(raw)
    for _ in range(rng.randrange(1, 8)):
        op = rng.random()
        pos = rng.randrange(len(data) + 1)
        if op < 0.4 and data:
            data[min(pos, len(data) - 1)] = rng.randrange(256)
        elif op < 0.7:
            data[pos:pos] = rng.randbytes(rng.randrange(1, 8))
        elif data:
            del data[pos:pos + rng.randrange(1, 16)]
    return bytes(data)


def generate(seed: int, seeds: list[bytes]) -> Iterator[bytes]:
    rng = random.Random(seed)
    while True:
        if seeds and rng.random() < 0.15:
            yield _mutate(rng, rng.choice(seeds))
        else:
            yield rng.choice(GENERATORS)(rng)


def outcome_class(result: Message | DeadLetter | Verdict) -> str:
    """A coarse outcome class: the reason with numbers and quoted parts taken out."""
    if isinstance(result, DeadLetter):
        return "dead: " + re.sub(r"\d+|'[^']*'", "#", result.reason)
    if isinstance(result, Verdict):
        return f"{result.decision.value}: " + re.sub(r"[\d.]+", "#", result.reason)
    return "message"


def check_one(engine: Engine, raw: bytes, limits: InputSettings = LIMITS) -> str:
    """Decode one record and decide it; returns its outcome class or raises AssertionError."""
    record = decode(raw, "fuzz:0", "line:1", 1_700_000_000_000, limits)
    if isinstance(record, DeadLetter):
        assert record.reason and record.raw == raw, "dead letter without a reason"
        return outcome_class(record)
    assert isinstance(record, Message), f"decode returned {type(record).__name__}"
    assert len(record.text) <= limits.max_chars, "message over input.max_chars"
    (verdict,) = engine.process([record])
    assert isinstance(verdict, Verdict) and verdict.reason, "verdict without a reason"
    return outcome_class(verdict)


def load_corpus(folder: Path) -> list[dict]:
    path = folder / CORPUS_FILE
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _case(raw: bytes, why: str) -> dict:
    return {"why": why, "raw_b64": base64.b64encode(raw).decode()}


class Fuzzer:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.settings = Settings(input=LIMITS)
        self.engine = Engine(self.settings, MemoryStore(TABLES))
        self.corpus_dir = Path(args.corpus)
        self.known = load_corpus(self.corpus_dir)
        self.seen_classes = {c["why"].split(" | ", 1)[-1] for c in self.known}
        self.new_cases: list[dict] = []
        self.failures = 0
        self.counts: dict[str, int] = {"dead letter": 0, "verdict": 0}
        self.slowest_ms = 0.0
        self.batch: list[tuple[bytes, Message]] = []

    def _keep(self, raw: bytes, why: str) -> None:
        if len(self.new_cases) < self.args.max_new:
            self.new_cases.append(_case(raw, why))

    def _fail(self, raw: bytes, what: str) -> None:
        self.failures += 1
        print(f"FAILURE: {what}\n  raw={raw[:200]!r}", file=sys.stderr, flush=True)
        self._keep(raw, f"failure | {what.splitlines()[0][:200]}")

    def _flush(self) -> None:
        if not self.batch:
            return
        try:
            verdicts = self.engine.process([m for _, m in self.batch])
        except Exception:  # one at a time to find the record that fails
            verdicts = []
            for raw, m in self.batch:
                try:
                    verdicts.extend(self.engine.process([m]))
                except Exception:
                    self._fail(raw, traceback.format_exc(limit=3))
                    verdicts.append(None)
        for (raw, _), v in zip(self.batch, verdicts, strict=True):
            if v is None:
                continue
            if not (isinstance(v, Verdict) and v.reason):
                self._fail(raw, f"bad verdict {v!r}")
                continue
            self.counts["verdict"] += 1
            self._classify(raw, outcome_class(v))
        self.batch = []

    def _classify(self, raw: bytes, cls: str) -> None:
        if cls not in self.seen_classes:
            self.seen_classes.add(cls)
            self._keep(raw, f"new outcome | {cls}")

    def feed(self, raw: bytes, n: int) -> None:
        started = time.perf_counter()
        try:
            record = decode(raw, "fuzz:0", f"line:{n}", 1_700_000_000_000 + n, LIMITS)
        except Exception:
            self._fail(raw, traceback.format_exc(limit=3))
            return
        took_ms = (time.perf_counter() - started) * 1000
        if took_ms > self.args.max_ms:
            self._fail(raw, f"decode took {took_ms:.0f} ms (> --max-ms {self.args.max_ms})")
        elif took_ms > max(self.slowest_ms, 5.0):
            self._keep(raw, f"slow decode {took_ms:.1f} ms | slow")
        self.slowest_ms = max(self.slowest_ms, took_ms)
        if isinstance(record, DeadLetter):
            if not record.reason or record.raw != raw:
                self._fail(raw, "dead letter without a reason")
                return
            self.counts["dead letter"] += 1
            self._classify(raw, outcome_class(record))
            return
        if not isinstance(record, Message) or len(record.text) > LIMITS.max_chars:
            self._fail(raw, f"decode gave {record!r:.200}")
            return
        self.batch.append((raw, record))
        if len(self.batch) >= self.args.batch:
            self._flush()

    def run(self) -> int:
        a = self.args
        seeds = [base64.b64decode(c["raw_b64"]) for c in self.known]
        started = last = time.monotonic()
        for n, raw in enumerate(generate(a.seed, seeds), 1):
            self.feed(raw, n)
            if n % a.engine_every == 0:
                self._flush()
                self.engine.close()
                self.engine = Engine(self.settings, MemoryStore(TABLES))
            if time.monotonic() - last >= a.progress_s or n == a.count:
                self._flush()
                last = time.monotonic()
                self._progress(n, last - started)
            if n >= a.count:
                break
        self._flush()
        self._save()
        print(json.dumps({"inputs": a.count, "failures": self.failures, **self.counts,
                          "outcome_classes": len(self.seen_classes),
                          "new_corpus_cases": len(self.new_cases),
                          "slowest_decode_ms": round(self.slowest_ms, 1),
                          "max_rss_mb": _rss_mb(),
                          "seconds": round(time.monotonic() - started, 1)}), flush=True)
        return 1 if self.failures else 0

    def _progress(self, n: int, elapsed: float) -> None:
        print(f"fuzz: {n:,}/{self.args.count:,} inputs, {n / max(elapsed, 1e-9):,.0f}/s, "
              f"dead letters {self.counts['dead letter']:,}, verdicts {self.counts['verdict']:,}, "
              f"failures {self.failures}, classes {len(self.seen_classes)}, "
              f"rss {_rss_mb()} MB", flush=True)

    def _save(self) -> None:
        if not self.new_cases or self.args.no_save:
            return
        self.corpus_dir.mkdir(parents=True, exist_ok=True)
        with (self.corpus_dir / CORPUS_FILE).open("a", encoding="utf-8") as f:
            for case in self.new_cases:
                f.write(json.dumps(case) + "\n")
        print(f"fuzz: {len(self.new_cases)} new cases added to {self.corpus_dir / CORPUS_FILE}")


def _rss_mb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m stream_dedup.tools.fuzz", description=__doc__.split(
        "\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=100_000, help="inputs to generate")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--corpus", default=str(Path(__file__).resolve().parents[2] / "tests" /
                                           "data" / "fuzz"), help="folder of kept cases")
    p.add_argument("--batch", type=int, default=500, help="messages per engine batch")
    p.add_argument("--engine-every", type=int, default=100_000,
                   help="a fresh engine after this many inputs (bounds memory)")
    p.add_argument("--max-ms", type=float, default=2000.0,
                   help="a record whose decode takes longer is a failure (a hang)")
    p.add_argument("--max-new", type=int, default=200, help="new corpus cases kept at most")
    p.add_argument("--progress-s", type=float, default=10.0)
    p.add_argument("--no-save", action="store_true", help="do not add cases to the corpus")
    args = p.parse_args(argv)
    return Fuzzer(args).run()


if __name__ == "__main__":
    sys.exit(main())
