"""An audit sample (`stream-dedup audit -o PAIRS.jsonl`) opened for judging: labels written back
to the file as they are given, and the running precision of the judged flagged pairs.

Each label rewrites the whole file (a temporary file renamed over it), keeping every other field
and the order of the lines, so a judge can stop at any time and `audit score` reads the file as
it is; a lock keeps two labels given at once from losing one."""

from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path

from ...errors import InputError
from ...tools.audit import LABELS, Precision, read_pairs, score


class Judging:
    """The pairs of one audit file and the labels given so far."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self.pairs = read_pairs(path)

    def label(self, index: int, label: str | None) -> None:
        """Set pair `index`'s label (None clears it) and write the file back."""
        if label not in (*LABELS, None):
            raise InputError(self.path, f"label must be one of {', '.join(LABELS)}")
        with self._lock:
            if not 0 <= index < len(self.pairs):
                raise InputError(self.path, f"no pair {index} (the file has {len(self.pairs)})")
            self.pairs[index] = {**self.pairs[index], "label": label}
            self._write()

    def _write(self) -> None:
        target = Path(self.path)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.writelines(json.dumps(p, ensure_ascii=False) + "\n" for p in self.pairs)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def precision(self) -> Precision:
        """Judged-dup share of the judged flagged pairs, with its 95% Wilson interval."""
        with self._lock:
            return score(self.pairs)["all"].get("all", Precision(0, 0))

    def next_unlabelled(self, after: int = -1) -> int:
        """The first pair after `after` with no label (wrapping round), or `after` if none."""
        with self._lock:
            n = len(self.pairs)
            for step in range(1, n + 1):
                k = (after + step) % n
                if self.pairs[k].get("label") is None:
                    return k
        return max(after, 0)

    def judged(self) -> int:
        with self._lock:
            return sum(p.get("label") is not None for p in self.pairs)
