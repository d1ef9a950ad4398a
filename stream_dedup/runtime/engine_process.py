"""The engine in a process of its own, so that the service decides one batch while it polls,
decodes, routes and sends the others (`engine.process: child`, the default; `inline` keeps it in
the service's process).

In one process the engine and the Kafka clients' per-record work (fetch, decode, route, send)
take turns on one core, whatever the machine has; in two, a backlog is decided faster and a live
feed's latency is no worse (docs: "Benchmarks"). With the producer on librdkafka the engine is
the busier of the two, so the parent also normalizes each batch's texts (`prepare`, while the
child decides the batch before), moving part of the child's work to the other core.

The child is spawned (it inherits none of the parent's threads or sockets), opens the state and
decides the batches it is given, in order: each batch's verdicts come back after its state write
is durable, as from `Engine.process`, with the engine's running totals. Messages and verdicts
cross the pipe as tuples, which pickle several times faster than the dataclasses.

Lifetime: the child ignores SIGINT and SIGTERM (a Ctrl-C reaches the whole process group; the
parent finishes the batch and then closes the child, which closes the state). A parent that dies
(kill -9) closes the pipe: the child ends after the batch it is on, closing the state, and the
child of a restarted service waits up to `LOCK_WAIT_S` for that directory lock. An exception in
the child is raised again in the parent, its class kept; a child that died is a `ServiceError`
with its exit code. Either way the parent committed nothing of the batch: a restart replays it.
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from typing import Any

from ..config import Settings
from ..engine.batch import Engine, open_engine
from ..engine.normalize import Normalizer
from ..errors import ServiceError, StateError
from ..records import Decision, Message, Verdict
from ..state import disk_bytes

log = logging.getLogger(__name__)
LOCK_WAIT_S = 30.0  # a killed service's engine process finishes its batch well within this
_DECISIONS = {d.value: d for d in Decision}


def _open(settings: Settings, path: str) -> Engine:
    """The engine on `path`, waiting while another process (a killed service's engine process
    finishing its batch) still holds the directory lock."""
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            return open_engine(settings, path)
        except StateError as exc:
            if "locked by another process" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _figures(engine: Engine) -> tuple[float, float]:
    bloom = engine.exact.bloom
    return bloom.fill_ratio(), bloom.estimated_fpr()


def _serve(conn: Connection, settings: Settings, path: str) -> None:
    """The child: open the engine, then decide each batch received until told to stop (None)
    or the parent is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        engine = _open(settings, path)
    except BaseException as exc:
        conn.send(("error", exc))
        return
    failed = False
    try:
        conn.send(("ok", engine.stored_messages(), engine.stats, _figures(engine)))
        while True:
            try:
                request = conn.recv()
            except EOFError:
                return  # the parent died: close the state and go
            if request is None:
                return
            rows, normalized, want_figures, want_candidates = request
            tried: dict[str, list[str]] | None = {} if want_candidates else None
            engine.on_candidates = None if tried is None else tried.__setitem__
            try:
                verdicts = engine.process([Message(*row) for row in rows], normalized)
            except BaseException as exc:
                failed = True
                conn.send(("error", exc))
                return
            conn.send(("ok", [(v.id, v.decision.value, v.reason, v.matched_id, v.distance,
                               v.similarity, v.guard, v.replayed) for v in verdicts],
                       engine.stats, _figures(engine) if want_figures else None, tried))
    except (BrokenPipeError, ConnectionResetError):
        return  # the parent died while the verdicts were on their way
    finally:
        try:
            engine.close()
        except StateError:
            if not failed:  # else the state broke with the error the parent was sent
                raise


class _Bloom:
    """The child's Bloom filter figures as of its last batch (`EngineProcess.exact.bloom`)."""

    def __init__(self, owner: EngineProcess) -> None:
        self._owner = owner
        self.figures = (0.0, 0.0)

    def fill_ratio(self) -> float:
        self._owner.want_figures = True
        return self.figures[0]

    def estimated_fpr(self) -> float:
        self._owner.want_figures = True
        return self.figures[1]


@dataclass(frozen=True, slots=True)
class _Exact:
    bloom: _Bloom


class _Store:
    """The state directory's size on disk, as the metrics read it."""

    def __init__(self, path: str, backend: str) -> None:
        self.path = path
        self.backend = backend

    def disk_bytes(self) -> int:
        return disk_bytes(self.backend, self.path)


class EngineProcess:
    """`Engine` in a child process: `submit` a batch, get its verdicts with `result` (one batch
    at a time); `process` does both. `stats`, `exact.bloom` and `store` are what the metrics
    read: the child's running totals and Bloom figures as of its last batch (figures asked for
    are sent with the next one), the directory's size."""

    pipelined = True

    def __init__(self, settings: Settings, path: str) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, settings, path),
                                 name="stream-dedup-engine", daemon=True)
        self._proc.start()
        child.close()
        self._busy = False
        self.want_figures = False
        # Told the candidates each message was compared with (the inspector's lookup), as an
        # `Engine` in this process tells them; the child sends them only when this is set.
        self.on_candidates: Callable[[str, list[str]], None] | None = None
        self._normalizer = Normalizer(settings.normalize)
        self._normalize_s = 0.0  # this process's share of the normalize stage
        self.exact = _Exact(_Bloom(self))
        self._stored_at_open, self.stats, self.exact.bloom.figures = self._receive()
        self.store = _Store(path, settings.state.backend)

    def prepare(self, messages: Sequence[Message]) -> memoryview:
        """The request that `submit` hands over, made while the child still decides the batch
        before: the texts normalized here, on this process's core (~12% of the child's work a
        message), and pickled."""
        t0 = time.perf_counter()
        normalized = self._normalizer.with_clauses([m.text for m in messages])
        self._normalize_s += time.perf_counter() - t0
        request = ForkingPickler.dumps((
            [(m.id, m.text, m.timestamp_ms, m.scope, m.origin) for m in messages], normalized,
            self.want_figures, self.on_candidates is not None))
        self.want_figures = False
        return request

    def submit(self, prepared: memoryview) -> None:
        """Hand a prepared batch to the child; its verdicts come with `result`."""
        if self._busy:
            raise RuntimeError("the engine process is deciding a batch already")
        self._send_bytes(prepared)
        self._busy = True

    def result(self) -> list[Verdict]:
        self._busy = False
        rows, self.stats, figures, tried = self._receive()
        self.stats.stage_seconds["normalize"] += self._normalize_s
        if figures is not None:
            self.exact.bloom.figures = figures
        if tried and self.on_candidates is not None:
            for message_id, candidates in tried.items():
                self.on_candidates(message_id, candidates)
        return [Verdict(i, _DECISIONS[d], *rest) for i, d, *rest in rows]

    def process(self, messages: Sequence[Message]) -> list[Verdict]:
        self.submit(self.prepare(messages))
        return self.result()

    def stored_messages(self) -> int:
        """Those the child found at its start, plus each stored since, minus the expired."""
        s = self.stats
        return self._stored_at_open + s.messages - s.replayed - s.expired

    def close(self) -> None:
        """Stop the child after the batch it is on (the state closed), waiting for it."""
        try:
            if self._busy:
                self.result()
            self._send(None)
        except ServiceError:
            pass  # it is gone already
        finally:
            self._proc.join(60)
            if self._proc.is_alive():
                log.warning("the engine process did not stop within 60 s: killing it")
                self._proc.kill()
                self._proc.join()
            self._conn.close()

    def _send(self, request: Any) -> None:
        self._send_bytes(ForkingPickler.dumps(request))

    def _send_bytes(self, payload: memoryview) -> None:
        try:
            self._conn.send_bytes(payload)
        except (BrokenPipeError, ConnectionResetError, EOFError):
            raise self._died() from None

    def _receive(self) -> Any:
        try:
            kind, *payload = self._conn.recv()
        except (EOFError, ConnectionResetError):
            raise self._died() from None
        if kind == "error":
            raise payload[0]
        return payload

    def _died(self) -> ServiceError:
        self._proc.join(5)
        return ServiceError(f"the engine process exited (code {self._proc.exitcode}); nothing "
                            "of its batch was committed: a restart replays it")
