"""`stream-dedup bulk-load`: a new state holding a window of history (`engine.preload`)."""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace

from ..config import Settings
from ..engine.batch import Engine, engine_store
from ..engine.preload import CHUNK, Preload
from ..records import Message
from .file_mode import Progress, _batches, _progress_total, _records


def cmd_bulk_load(args: argparse.Namespace, settings: Settings) -> int:
    store = engine_store(replace(settings, state=replace(settings.state, backend="rocksdb")),
                         args.state, sync=False)
    started = time.perf_counter()
    try:
        preload = Preload(settings, store)
        progress = Progress(not args.quiet, _progress_total(args.input, not args.quiet))
        read = skipped = 0
        for batch in _batches(_records(args.input, settings), CHUNK):
            messages = [r for _, _, r in batch if isinstance(r, Message)]
            skipped += len(batch) - len(messages)
            preload.add(messages)
            read += len(batch)
            progress.update(read, f"{preload.indexed:,} indexed")
        progress.finish()
        tables = Progress(not args.quiet, None, unit="entry", noun="block-table entries")
        entries = preload.finish(tables.update)
        tables.finish()
        Engine(settings, store).close()  # records the layout, snapshots the Bloom filter
    except BaseException:
        store.close()
        raise
    if not args.quiet:
        print(f"{preload.stored:,} messages stored ({preload.indexed:,} indexed, "
              f"{entries:,} block-table entries), {skipped:,} unreadable records skipped, "
              f"in {time.perf_counter() - started:.1f} s: {args.state}", file=sys.stderr)
    return 0
