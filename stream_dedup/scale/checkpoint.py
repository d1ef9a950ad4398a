"""The local checkpoint of a changelog-backed state directory, as Kafka Streams' `.checkpoint`.

A file next to the directory (`<dir>.checkpoint`) says "this directory holds exactly the
changelog partition up to offset N": written only after a clean close, once every file of the
directory is synced, and removed (durably) before the directory is opened for writing. So a
crash while the directory is in use leaves no checkpoint, and a directory that may be ahead of
its changelog (written locally, not yet acknowledged) is never trusted: it is restored in full.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass

SUFFIX = ".checkpoint"


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The changelog (topic, partition) a directory mirrors, the offset it holds everything
    before, and when that was written (tombstones older than the topic's
    `delete.retention.ms` may be gone, so an old checkpoint is not trusted)."""

    topic: str
    partition: int
    offset: int
    written_at: float


def path_of(directory: str) -> str:
    return directory.rstrip(os.sep) + SUFFIX


def read(directory: str) -> Checkpoint | None:
    """The checkpoint of `directory`, or None when there is none or it cannot be read."""
    try:
        with open(path_of(directory), encoding="utf-8") as f:
            data = json.load(f)
        return Checkpoint(str(data["topic"]), int(data["partition"]), int(data["offset"]),
                          float(data["written_at"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remove(directory: str) -> None:
    """Remove the checkpoint, durably: done before the directory is written to."""
    try:
        os.remove(path_of(directory))
    except FileNotFoundError:
        return
    _sync_dir(os.path.dirname(path_of(directory)) or ".")


def write(directory: str, topic: str, partition: int, offset: int) -> None:
    """Sync every file of the (closed) `directory`, then record that it holds the changelog
    up to `offset` (written to a temporary file, synced, renamed)."""
    sync_tree(directory)
    target = path_of(directory)
    tmp = target + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"topic": topic, "partition": partition, "offset": offset,
                   "written_at": time.time()}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, target)
    _sync_dir(os.path.dirname(target) or ".")


def sync_tree(directory: str) -> None:
    """fsync every file under `directory`, then the directories (RocksDB's write-ahead log is
    not synced per write unless `state.sync_writes`)."""
    for root, _dirs, files in os.walk(directory):
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _sync_dir(root)


def _sync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
