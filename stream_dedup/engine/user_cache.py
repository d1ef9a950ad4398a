"""What the engine derives from installed data once a machine and keeps in a user cache: the
lexicon's resources (`resources`), the script converter's witnesses (`simplify`).

A cached file's name holds a digest of everything it was derived from (the deriving module's
source, the data files' sizes and times, Python's version), so a change of any of them derives it
again; a cache that cannot be read or written means deriving it in each process, never an error.

The directory is `$STREAM_DEDUP_CACHE_DIR`, else `$XDG_CACHE_HOME/stream-dedup`, else
`~/.cache/stream-dedup`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

log = logging.getLogger(__name__)


def path_for(kind: str, sources: Iterable[Path], data: Iterable[Path]) -> Path:
    """Where `kind` derived from these `sources` (read whole: the modules that derive it) and
    `data` (files known by their size and time: an upgrade rewrites them) is cached."""
    root = os.environ.get("STREAM_DEDUP_CACHE_DIR")
    if not root:
        root = os.path.join(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache",
                            "stream-dedup")
    digest = hashlib.sha256(f"{sys.version_info[:2]}".encode())
    for source in sources:
        digest.update(source.read_bytes())
    for path in data:
        stat = path.stat()
        digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return Path(root) / f"{kind}-{digest.hexdigest()[:20]}.pickle"


def read(path: Path, what: str) -> object | None:
    """The object cached at `path`; None when there is none, or it cannot be read (said)."""
    try:
        with path.open("rb") as f:
            return pickle.load(f)
    except FileNotFoundError:
        return None
    except Exception as exc:  # a torn or foreign file: derived again
        log.warning("the cached %s in %s are unreadable (%s): rebuilt", what, path, exc)
        return None


def write(path: Path, found: object, what: str) -> None:
    """Cache `found` at `path` atomically (a reader sees the old file or the whole new one) and
    remove the files of the same kind derived from other versions."""
    kind = path.name.rsplit("-", 1)[0]
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{kind}-",
                                         delete=False) as f:
            pickle.dump(found, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(f.name, path)
        for old in path.parent.glob(f"{kind}-*{path.suffix}"):
            if old != path:
                old.unlink(missing_ok=True)
    except OSError as exc:
        log.warning("cannot cache the %s in %s (%s): they are derived again in each process",
                    what, path.parent, exc)
