"""The `stream-dedup` command line.

Exit codes: 0 done; 1 an expected failure (bad config, unreadable input, state locked), printed
as one line without a traceback; 2 bad command-line usage (argparse).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ..config_file import load_config
from ..errors import StreamDedupError
from ..ops.logs import configure
from .bulk_load import cmd_bulk_load
from .file_mode import cmd_audit, cmd_check, cmd_dedup, cmd_eval, cmd_fit
from .inspect_command import cmd_inspect
from .kafka_commands import cmd_demo, cmd_produce, cmd_run, cmd_stage, cmd_topics
from .parser import build_parser

KAFKA_COMMANDS = ("run", "produce", "topics", "demo", "stage")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure(args.log_format)
    try:
        settings = load_config(args.config)
        handler = {"dedup": cmd_dedup, "bulk-load": cmd_bulk_load, "check": cmd_check,
                   "eval": cmd_eval, "fit": cmd_fit,
                   "run": cmd_run,
                   "audit": cmd_audit, "inspect": cmd_inspect,
                   "produce": cmd_produce, "topics": cmd_topics, "demo": cmd_demo,
                   "stage": cmd_stage}[args.command]
        if args.command in KAFKA_COMMANDS:
            from ..runtime.lifecycle import quiet_kafka_logs

            quiet_kafka_logs()
        return handler(args, settings)
    except StreamDedupError as exc:
        print(f"stream-dedup: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("stream-dedup: interrupted", file=sys.stderr)
        return 130
