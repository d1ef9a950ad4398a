"""`stream-dedup inspect`: the inspector's pages for a file run or an audit sample, served until
Ctrl-C on the metrics port's settings (its TLS and basic auth too)."""

from __future__ import annotations

import argparse
import sys
import threading
from dataclasses import replace
from pathlib import Path

from ..config import Settings
from ..errors import StreamDedupError
from ..ops.health import serve_app
from ..ops.inspector.app import Inspector
from ..ops.inspector.files import load_run
from ..ops.inspector.judging import Judging
from ..ops.inspector.render import PREFIX
from ..runtime.lifecycle import metrics_security, metrics_url
from .parser import build_parser


def cmd_inspect(args: argparse.Namespace, settings: Settings) -> int:
    if args.decisions is None and args.audit is None:
        build_parser().error("usage: stream-dedup inspect DECISIONS [--input FILE] "
                             "[--audit PAIRS]: give a decisions file, an audit file or both")
    if args.input is not None and args.decisions is None:
        build_parser().error("--input names the input of the run whose DECISIONS are given")
    m = replace(settings.metrics, port=settings.metrics.port if args.port is None else args.port,
                address=args.address or settings.metrics.address)
    recent = load_run(args.decisions, args.input, settings) if args.decisions else None
    judging = Judging(args.audit) if args.audit else None
    app = Inspector(settings, recent, judging, title=Path(args.decisions or args.audit).name)
    try:
        server = serve_app(app, m.port, m.address, **metrics_security(m))
    except OSError as exc:
        raise StreamDedupError(f"cannot serve the inspector on {m.address}:{m.port}: {exc} "
                               "(--port another one, or 0 for any free one)") from None
    url = metrics_url(m, server.port).removesuffix("/metrics") + PREFIX
    held = f"{len(recent.seen()):,} verdicts held of {recent.total:,}" if recent else "no run"
    print(f"inspector: {url}{'/audit' if recent is None else ''} ({held}"
          f"{f', {len(judging.pairs)} audit pairs' if judging else ''}); Ctrl-C to stop",
          file=sys.stderr, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0
