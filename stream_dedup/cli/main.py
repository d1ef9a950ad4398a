"""The `stream-dedup` command line.

Exit codes: 0 done; 1 an expected failure (bad config, unreadable input, state locked), printed
as one line without a traceback; 2 bad command-line usage (argparse).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from ..config_file import load_config
from ..errors import StreamDedupError
from ..ops.logs import configure
from .parser import build_parser

KAFKA_COMMANDS = ("run", "produce", "topics", "demo", "stage")
# Each command's module and handler, imported when the command runs: file mode does not pay for
# the Kafka clients or the inspector's web stack at start.
HANDLERS = {"dedup": ("file_mode", "cmd_dedup"), "check": ("file_mode", "cmd_check"),
            "eval": ("file_mode", "cmd_eval"), "fit": ("file_mode", "cmd_fit"),
            "audit": ("file_mode", "cmd_audit"), "bulk-load": ("bulk_load", "cmd_bulk_load"),
            "inspect": ("inspect_command", "cmd_inspect"),
            **{c: ("kafka_commands", f"cmd_{c}") for c in KAFKA_COMMANDS}}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure(args.log_format)
    try:
        settings = load_config(args.config)
        module, name = HANDLERS[args.command]
        handler = getattr(importlib.import_module(f".{module}", __package__), name)
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
