"""Records a topic cannot take become dead letters that it can: no record blocks a batch.

A record passes `input.max_bytes` or is a dead letter of its own, and either way its output
carries the whole input value; a value over the producer's `message.max.bytes` or the topic's
`max.message.bytes` would be refused by every attempt, and the batch (and so every later one)
would never be committed. `fit` turns each such output into a dead letter whose value is cut to
fit the dead-letter topic, with headers giving the original size, a digest of the whole value and
the reason. `shrink` does the same for an output the broker refused anyway (a limit changed since
the start); a cut dead letter it refuses too is skipped by the sink, which logs and counts it.
The service fits each routed output (`route.route`), the stages of scope global their outputs
(`fit_all`): one rule for both.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import replace

from . import headers as h
from .output import Output

# librdkafka's default `message.max.bytes`, set explicitly on the service's producer: the most
# one record (key, value and headers) may take.
PRODUCER_MAX_BYTES = 1_000_000
# A record's framing besides its key, value and header bytes: the batch header (61 bytes) and
# the varints of one record, rounded up generously (a cut value a few bytes shorter costs nothing).
OVERHEAD_BYTES = 256
HEADER_OVERHEAD_BYTES = 10  # the two length varints of one header
# What `shrink` cuts a refused record to: well under any limit a topic has in practice.
SHRUNK_BYTES = 16 * 1024
Source = tuple[str, int, int]  # topic, partition, offset of the input record


def record_bytes(o: Output) -> int:
    """An upper bound of what `o` takes in a record batch of its own."""
    head = sum(len(k) + len(v) + HEADER_OVERHEAD_BYTES for k, v in o.headers)
    return OVERHEAD_BYTES + len(o.key or b"") + len(o.value or b"") + head


def limits_of(topic_limits: Mapping[str, int]) -> dict[str, int]:
    """The most bytes a record of each topic may take: its `max.message.bytes`, and never more
    than the producer sends."""
    return {t: min(n, PRODUCER_MAX_BYTES) for t, n in topic_limits.items()}


def quick_bound(limits: Mapping[str, int]) -> int:
    """A value length below which no output needs a closer look: half the smallest limit (the
    other half is room for the key and headers, which are a few hundred bytes)."""
    return min(limits.values(), default=PRODUCER_MAX_BYTES) // 2


def digest(value: bytes) -> str:
    return "sha256:" + hashlib.sha256(value).hexdigest()


def cut(o: Output, reason: str, dead_letter_topic: str, limit: int,
        source: Source | None = None) -> Output:
    """`o` as a dead letter for `dead_letter_topic` whose value is cut to fit `limit` bytes,
    read from `source` (None: the source headers `o` has). An output that was a dead letter keeps
    its reason (why it could not be read), and `reason` (why it was cut) is added to it."""
    value = o.value or b""
    own = [(k, v) for k, v in o.headers if not k.startswith(h.PREFIX)]
    ours = dict(o.headers)
    error = ours.get(h.ERROR)
    why = reason if error is None else f"{error.decode(errors='replace')}; {reason}"
    if source is not None:
        where = h.dead_letter_headers(why, *source)
    else:
        where = [(h.ERROR, why.encode())] + [
            (k, ours[k]) for k in (h.SOURCE_TOPIC, h.SOURCE_PARTITION, h.SOURCE_OFFSET)
            if k in ours]
    size = [(h.ORIGINAL_SIZE, str(len(value)).encode()), (h.DIGEST, digest(value).encode())]
    letter = replace(o, kind="dead_letter", topic=dead_letter_topic, value=b"",
                     headers=own + where + size, partition=None)
    letter.value = value[:max(limit - record_bytes(letter), 0)]
    return letter


def fit(o: Output, limits: Mapping[str, int], dead_letter_topic: str,
        source: Source | None = None) -> Output:
    """`o`, or when its topic cannot take it (over `limits`), `o` cut into a dead letter."""
    limit = limits.get(o.topic, PRODUCER_MAX_BYTES)
    if record_bytes(o) <= limit:
        return o
    return cut(o, f"record of {len(o.value or b'')} bytes is too large for topic {o.topic} "
                  f"(at most {limit} bytes a record)", dead_letter_topic,
               limits.get(dead_letter_topic, PRODUCER_MAX_BYTES), source)


def fit_all(outputs: Sequence[Output], limits: Mapping[str, int], dead_letter_topic: str
            ) -> list[Output]:
    """`fit` of every output whose value is long enough to need it (`quick_bound`), for a loop
    whose outputs are not routed from input records one by one (the stages of scope global):
    a dead letter made here reads its source from the output's own headers."""
    quick = quick_bound(limits)
    return [fit(o, limits, dead_letter_topic) if len(o.value or b"") > quick else o
            for o in outputs]


def is_cut(o: Output) -> bool:
    """Whether `o` is already a dead letter cut by `cut`."""
    return any(k == h.DIGEST for k, _ in o.headers)


def shrink(o: Output, error: str, dead_letter_topic: str) -> Output | None:
    """A refused output as a dead letter cut to `SHRUNK_BYTES`, or None when it is one already
    (nothing smaller is worth sending)."""
    if is_cut(o):
        return None
    return cut(o, f"refused by topic {o.topic}: {error}", dead_letter_topic, SHRUNK_BYTES)
