"""The recent verdicts the inspector shows: a bounded ring kept by the service, never a scan of
the state.

Every duplicate and every related message (a unique one with a `matched_id`) is kept; of the
other uniques one in `unique_every`, so the page shows what a plain message looks like without
uniques pushing the decisions worth a look out of the ring. The texts of the last `size`
messages (every one, kept or not) are held apart, so the earlier text of a pair is found when it
is recent. Memory is bounded by `size` whatever the traffic: the ring, the texts and the
candidates each hold at most `size` entries.

The service's thread adds, the HTTP threads read: every access takes one lock, and readers get
copies.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..records import Verdict


@dataclass(frozen=True, slots=True)
class Seen:
    """One verdict as the inspector shows it: the verdict, when it was made, the message's text.
    `kind` is the verdict as a moderator reads it: exact, near, related or unique."""

    verdict: Verdict
    time_ms: int | None
    text: str | None

    @property
    def kind(self) -> str:
        v = self.verdict
        if v.decision.value == "unique" and v.matched_id is not None:
            return "related"
        return v.decision.value


class RecentVerdicts:
    """The last `size` verdicts worth showing, the last `size` texts and candidate lists."""

    def __init__(self, size: int, unique_every: int = 20) -> None:
        if size < 1 or unique_every < 1:
            raise ValueError("size and unique_every must be at least 1")
        self.size = size
        self.unique_every = unique_every
        self._lock = threading.Lock()
        self._ring: deque[Seen] = deque(maxlen=size)
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._candidates: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._uniques = 0
        self.total = 0

    def add(self, verdicts: Sequence[Verdict], texts: Sequence[str | None],
            times_ms: Sequence[int | None]) -> None:
        """One batch: each verdict with its message's text and time (None: not known)."""
        with self._lock:
            for verdict, text, time_ms in zip(verdicts, texts, times_ms, strict=True):
                self.total += 1
                if text is not None:
                    self._remember(self._texts, verdict.id, text)
                if verdict.decision.value == "unique" and verdict.matched_id is None:
                    self._uniques += 1
                    if (self._uniques - 1) % self.unique_every:
                        continue
                self._ring.append(Seen(verdict, time_ms, text))

    def remember_text(self, message_id: str, text: str) -> None:
        """The text of a message whose verdict came without one (file mode reads it apart)."""
        with self._lock:
            self._remember(self._texts, message_id, text)

    def candidates_tried(self, message_id: str, candidates: list[str]) -> None:
        """The engine's `on_candidates` hook: the ids a message was compared with, best first."""
        with self._lock:
            self._remember(self._candidates, message_id, tuple(candidates))

    def _remember(self, table: OrderedDict, key: str, value: object) -> None:
        table[key] = value
        table.move_to_end(key)
        while len(table) > self.size:
            table.popitem(last=False)

    def seen(self) -> list[Seen]:
        """The ring, newest first."""
        with self._lock:
            return list(reversed(self._ring))

    def find(self, message_id: str) -> Seen | None:
        """The newest kept verdict of `message_id`."""
        with self._lock:
            return next((s for s in reversed(self._ring) if s.verdict.id == message_id), None)

    def text(self, message_id: str | None) -> str | None:
        with self._lock:
            return self._texts.get(message_id) if message_id is not None else None

    def candidates(self, message_id: str) -> tuple[str, ...] | None:
        """The candidates tried for `message_id`, or None when the engine did not say (an
        exact duplicate, a replay, or an engine in another process)."""
        with self._lock:
            return self._candidates.get(message_id)

    def held(self) -> tuple[int, int, int]:
        """(verdicts, texts, candidate lists) held now: each at most `size`."""
        with self._lock:
            return len(self._ring), len(self._texts), len(self._candidates)


def fill(recent: RecentVerdicts, rows: Iterable[tuple[Verdict, str | None, int | None]],
         chunk: int = 1000) -> None:
    """Add rows of (verdict, text, time) in chunks (file mode reads a decisions file)."""
    batch: list[tuple[Verdict, str | None, int | None]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= chunk:
            recent.add(*zip(*batch, strict=True))  # type: ignore[arg-type]
            batch = []
    if batch:
        recent.add(*zip(*batch, strict=True))  # type: ignore[arg-type]
