"""Settings: one typed, frozen tree loaded from `config.yaml`.

Every section is a frozen dataclass; `load_config` rejects unknown keys, checks types and allowed
values, and runs the cross-field checks, so a wrong config fails at start with the key named,
never deep inside a batch. `config.yaml` at the repo top documents every key with its default.
Environment variables override single keys for containers: ``STREAM_DEDUP__STATE__PATH=/data``
sets `state.path` (double underscores separate the path; values are parsed as YAML scalars).
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import yaml

from .engine.normalize import NormalizeSettings
from .errors import ConfigError, ConfigFileError

ENV_PREFIX = "STREAM_DEDUP__"


@dataclass(frozen=True, slots=True)
class InputSettings:
    """How a raw record becomes a message."""

    format: Literal["auto", "json", "text"] = "auto"
    text_field: str = "text"  # dotted path into JSON, e.g. "data.content"
    id_field: str | None = "id"  # None: the id is the record's position (line or offset)
    time_field: str | None = None  # event time (epoch s/ms or ISO 8601); None: arrival time
    title_field: str | None = None  # a title, when the record has one, becomes the first line
    max_bytes: int = 65536  # larger records are dead letters
    max_chars: int = 10000  # decoded text longer than this is a dead letter
    max_json_depth: int = 32  # JSON nested deeper than this is a dead letter


@dataclass(frozen=True, slots=True)
class ExactSettings:
    """The exact stage: rolling Bloom filter over normalized-text hashes, confirmed in state."""

    enabled: bool = True
    expected_rate_per_s: float = 500.0  # sizing: messages a second the filter must hold
    false_positive_rate: float = 0.01  # target FPR over the whole window (hits are confirmed)
    generations: int = 4  # the window is covered by this many rolling generations


@dataclass(frozen=True, slots=True)
class FingerprintSettings:
    """How messages are fingerprinted for the block tables, and their winnowing anchors.

    `strategy` picks the fingerprint (`strategies/`); the research strategies (seeds 000-004) read
    the keys after `anchor_window`. The anchors stay on whatever the strategy.
    """

    strategy: Literal["char-simhash", "simhash", "shingle", "tfidf", "weighted", "p-simhash",
                      "e-simhash", "drpkp"] = "char-simhash"

    ngram: int = 1  # characters per feature: 1 keeps short-text fingerprints most stable
    anchor_ngram: int = 4  # winnowing: characters per hashed n-gram
    anchor_window: int = 8  # winnowing window: any shared run of ngram+window-1 chars is seen
    stats: str | None = None  # corpus statistics from `stream-dedup fit` (STATS_STRATEGIES)
    shingle_width: int = 2  # shingle: words per shingle (W of seed 001)
    top_m: int = 20  # p-simhash: the m heaviest words make the fingerprint
    mu: float = 1.5  # p-simhash: SigFnl = mu*Sig + (1-mu)*Sig'
    title: bool = False  # weighted, drpkp: a text's first paragraph is its title
    drpkp_share: float = 0.5  # drpkp: share of paragraphs within k bits that makes a duplicate


# Strategies whose weights need corpus statistics (IDF, co-occurrence, entropy) fitted beforehand.
STATS_STRATEGIES = frozenset({"tfidf", "weighted", "p-simhash", "e-simhash"})


@dataclass(frozen=True, slots=True)
class IndexSettings:
    """Block tables over the fingerprints, plus the anchor table."""

    layout: Literal["blocks", "permuted"] = "blocks"
    max_distance: int = 3  # k: every pair within k bits is guaranteed to be found
    blocks: int = 0  # r for "permuted" (0: k+2); "blocks" always uses k+1
    candidate_distance: int = 10  # bucket entries farther than this (sharing no anchor) are skipped
    anchors: bool = True  # shared winnowing anchors also propose candidates
    anchor_postings: int = 64  # the most recent messages an anchor remembers
    anchors_stored: int = 8  # a message is posted under its k smallest anchors (0: all)
    short_chars: int = 20  # texts up to this long also get bigram anchors (0: none)
    very_short_chars: int = 8  # texts up to this long (+1) also get one-deletion keys (0: none)
    max_candidates: int = 16  # candidates verified per message, best first


@dataclass(frozen=True, slots=True)
class VerifySettings:
    """The second measure on stored features, and which meaning changes make a pair related."""

    min_jaccard: float = 0.6  # character-bigram Jaccard that makes a near duplicate
    min_containment: float = 0.8  # share of the shorter text's bigrams found in the longer
    max_length_ratio: float = 2.0  # containment counts only when lengths are this close
    min_chars: int = 8  # shorter texts match only when they differ by particles, greetings, slips
    short_chars: int = 20  # pairs of texts this short are also aligned when bigrams fail ...
    min_aligned: float = 0.8  # ... and match when this share of the shorter is explained
    related_contained: bool = True  # an earlier text inside a much longer later one is related
    min_excerpt_chars: int = 20  # a later text this long inside a much longer earlier one is a dup
    # A later text that puts a passage of its own inside an earlier one is not its copy (a
    # fuller earlier text may still be: the search goes on):
    related_passage: bool = True
    min_passage_chars: int = 5  # own characters taken out and put in, the two together
    # Meaning changes that make a near match only *related* (the message goes out as unique):
    related_number: bool = True  # a number changed (its value, its unit or magnitude)
    related_date: bool = True  # a date, time or weekday changed
    related_entity: bool = True  # a person, place or organisation replaced
    related_negation: bool = True  # a negation added or removed
    related_antonym: bool = True  # a word replaced by its antonym or one of opposite sentiment
    related_swap: bool = True  # two words traded places ("A beat B" / "B beat A")
    related_word: bool = True  # a dictionary word replaced by a different one (not a synonym)
    related_inserted: bool = True  # a content word (name, noun, verb) inserted inside the text
    related_added: bool = True  # a clause of new content added at an edge of a short text
    # Text the stream repeats is boilerplate, not new content: a character is common when a
    # trigram over it was carried by this many earlier messages (of the last two generations of
    # `boilerplate_generation` messages each).
    boilerplate_messages: int = 3
    boilerplate_generation: int = 20_000
    # The enabled classes of meaning change (meaning.MEANING_CLASSES names), derived from the
    # related_* flags once: every verified pair asks for them.
    meaning_classes: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        switched = ("number", "date", "entity", "negation", "antonym", "swap", "word", "inserted",
                    "added")
        classes = {name for name in switched if getattr(self, f"related_{name}")}
        if self.related_number:
            classes.add("unit")  # a number's unit or magnitude is part of the number
        object.__setattr__(self, "meaning_classes", frozenset(classes))


@dataclass(frozen=True, slots=True)
class WindowSettings:
    """How long the state remembers a message (event time)."""

    seconds: float = 24 * 3600.0


@dataclass(frozen=True, slots=True)
class StateSettings:
    """Where the RocksDB state lives."""

    path: str = "state"
    backend: Literal["rocksdb", "memory"] = "rocksdb"
    block_cache_mb: int = 256
    sync_writes: bool = False  # fsync per batch; the WAL survives a process crash without it


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """Batching of the hot path, and where the service runs the engine."""

    batch_size: int = 4000
    # `stream-dedup run` with `scale.scope: process`: child, in a process of its own while the
    # service polls and sends (`engine_process.py`); inline in the service's process.
    process: Literal["inline", "child"] = "child"


@dataclass(frozen=True, slots=True)
class MetricsSettings:
    """The metrics port of `stream-dedup run`: /metrics, /healthz and /readyz (`health.py`)."""

    port: int = 9108  # 0: no HTTP server
    address: str = "127.0.0.1"  # 0.0.0.0 to be scraped from elsewhere (the container image does)
    dedup_window_s: float = 300.0  # the sliding window of stream_dedup_dedup_ratio
    tls_certfile: str | None = None  # PEM certificate (chain): serve the port over HTTPS
    tls_keyfile: str | None = None  # its private key (PEM)
    basic_auth_user: str | None = None  # /metrics and /readyz need this user (/healthz: open)
    basic_auth_password_env: str | None = None  # environment variable holding its password
    basic_auth_password_file: str | None = None  # or a file holding it


@dataclass(frozen=True, slots=True)
class KafkaSettings:
    """The streaming service (`stream-dedup run`): where it reads, where it writes, how it waits.

    Timeouts bound every blocking step so a shutdown finishes in bounded time; a broker that is
    away is retried with backoff from `retry_backoff_s` doubling up to `retry_backoff_max_s`.
    """

    bootstrap_servers: str = "127.0.0.1:9092"  # host:port[,host:port...]
    input_topics: tuple[str, ...] = ("stream-dedup-input",)
    output_topic: str = "stream-dedup-unique"  # unique messages, as read, plus verdict headers
    duplicates_topic: str | None = "stream-dedup-duplicates"  # None: duplicates are dropped
    dead_letter_topic: str = "stream-dedup-dead-letters"  # records that could not be read
    group_id: str = "stream-dedup"
    client_id: str = "stream-dedup"
    auto_offset_reset: Literal["earliest", "latest"] = "earliest"  # a group with no offsets
    poll_batch_size: int = 8000  # most records decided together (see config.yaml)
    batch_wait_ms: int = 20  # how long a poll waits for the first record (and, in a backlog, for
    # each further fetch that fills the batch)
    fetch_min_bytes: int = 16384  # the broker holds a fetch until this much arrived (at most
    # min(batch_wait_ms, 100) ms): fewer, larger batches on a live feed (see config.yaml)
    max_poll_interval_ms: int = 300000  # a batch slower than this loses the partitions
    session_timeout_ms: int = 10000  # a silent consumer leaves the group after this
    produce_timeout_s: float = 60.0  # one delivery attempt of a batch's outputs
    commit_timeout_s: float = 10.0  # one offset commit attempt
    retry_backoff_s: float = 0.5  # first wait after a failed step (broker away)
    retry_backoff_max_s: float = 10.0  # the wait doubles up to this
    shutdown_timeout_s: float = 30.0  # after SIGTERM: give up flushing/committing after this
    linger_ms: int = 5  # the producer gathers outputs this long into one request
    partitions: int = 6  # `topics create`: partitions of every topic it makes
    replication_factor: int = 1  # `topics create`
    # Security (`kafka/security.py`; docs/security.md). Passwords never live in this file: only
    # the name of an environment variable or the path of a file (a Kubernetes secret) holding it.
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_SSL", "SASL_PLAINTEXT"] = "PLAINTEXT"
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] = "SCRAM-SHA-512"
    sasl_username: str | None = None
    sasl_password_env: str | None = None  # name of the environment variable with the password
    sasl_password_file: str | None = None  # file whose content (trailing newline cut) it is
    ssl_cafile: str | None = None  # CA bundle (PEM) that signed the brokers; None: system CAs
    ssl_certfile: str | None = None  # client certificate (PEM) for mutual TLS
    ssl_keyfile: str | None = None  # its private key (PEM, unencrypted)
    ssl_check_hostname: bool = True  # the broker certificate must name the host connected to


@dataclass(frozen=True, slots=True)
class TopologySettings:
    """The topics between the three stages of `scope: global` (`stream-dedup stage ...`).

    Answers and originals share one partition count: a message's answers and its original land on
    the same partition number, so the decide group (range assignment) gets both together.
    """

    probes_topic: str = "stream-dedup-probes"  # fingerprint -> index: probes by shard key
    answers_topic: str = "stream-dedup-answers"  # index -> decide: answers by message id
    originals_topic: str = "stream-dedup-originals"  # fingerprint -> decide: records by id
    probes_partitions: int = 12  # index shards: the most index processes that share the work
    join_partitions: int = 6  # answers and originals each: the most decide processes


@dataclass(frozen=True, slots=True)
class ScaleSettings:
    """How `stream-dedup run` shares the work between processes (docs/scaling.md).

    `process`: one index per process over every partition it consumes (run one process, or
    partition the feed so that copies share a partition). `key`: dedup within the message key;
    one engine per input partition, its state mirrored to a compacted changelog topic and
    restored from it when the partition moves (`scale/partitioned.py`). `global`: one index
    over all partitions, sharded by fingerprint (`stream-dedup stage ...`, section `topology`).
    """

    scope: Literal["process", "key", "global"] = "process"
    # Changelog topic of each input topic ({group_id} and {topic} are filled in).
    changelog_topic: str = "{group_id}-{topic}-changelog"
    restore_timeout_s: float = 600.0  # a partition's restore taking longer stops the process
    changelog_max_record_bytes: int = 8 << 20  # the topics' max.message.bytes (big buckets)
    # A partition's directory closed in sync with its changelog restores only the records
    # since, when reopened within this time (<= the topics' delete.retention.ms); 0: never.
    checkpoint_max_age_s: float = 86400.0

    def changelog_for(self, group_id: str, topic: str) -> str:
        """The changelog topic of input `topic`."""
        return self.changelog_topic.format(group_id=group_id, topic=topic)


@dataclass(frozen=True, slots=True)
class Settings:
    """The root of the settings tree; one attribute per section of config.yaml."""

    input: InputSettings = field(default_factory=InputSettings)
    normalize: NormalizeSettings = field(default_factory=NormalizeSettings)
    exact: ExactSettings = field(default_factory=ExactSettings)
    fingerprint: FingerprintSettings = field(default_factory=FingerprintSettings)
    index: IndexSettings = field(default_factory=IndexSettings)
    verify: VerifySettings = field(default_factory=VerifySettings)
    window: WindowSettings = field(default_factory=WindowSettings)
    state: StateSettings = field(default_factory=StateSettings)
    engine: EngineSettings = field(default_factory=EngineSettings)
    kafka: KafkaSettings = field(default_factory=KafkaSettings)
    topology: TopologySettings = field(default_factory=TopologySettings)
    scale: ScaleSettings = field(default_factory=ScaleSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)


def _type_name(tp: Any) -> str:
    if get_origin(tp) is Literal:
        return ", ".join(repr(a) for a in get_args(tp))
    if isinstance(tp, types.UnionType) or get_origin(tp) is typing.Union:
        return " or ".join(_type_name(a) for a in get_args(tp))
    if get_origin(tp) is tuple:
        return f"a list of {_type_name(get_args(tp)[0])}"
    return "null" if tp is type(None) else getattr(tp, "__name__", str(tp))


def _coerce(key: str, value: Any, tp: Any) -> Any:
    """Check one value against its annotated type; ints are accepted where floats are."""
    origin = get_origin(tp)
    if origin is Literal:
        if value in get_args(tp):
            return value
        raise ConfigError(key, f"{value!r} is not allowed", _type_name(tp))
    if isinstance(tp, types.UnionType) or origin is typing.Union:
        for option in get_args(tp):
            try:
                return _coerce(key, value, option)
            except ConfigError:
                continue
        raise ConfigError(key, f"{value!r} has the wrong type", _type_name(tp))
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    if origin is tuple and isinstance(value, list | tuple):
        (item, _) = get_args(tp)
        return tuple(_coerce(f"{key}[{n}]", v, item) for n, v in enumerate(value))
    if tp is type(None) and value is None:
        return None
    if tp is bool and isinstance(value, bool):
        return value
    if tp is float and is_number:
        return float(value)
    if tp is int and is_number and isinstance(value, int):
        return value
    if tp is str and isinstance(value, str):
        return value
    raise ConfigError(key, f"{value!r} has the wrong type", _type_name(tp))


def _build(cls: type, data: Any, prefix: str) -> Any:
    if not isinstance(data, Mapping):
        raise ConfigError(prefix or "<root>", "must be a mapping of keys to values")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}  # derived ones are not keys
    unknown = sorted(set(data) - set(fields))
    if unknown:
        key = f"{prefix}{unknown[0]}"
        raise ConfigError(key, "unknown key", ", ".join(f"{prefix}{n}" for n in fields))
    kwargs = {}
    for name, value in data.items():
        tp = hints[name]
        if dataclasses.is_dataclass(tp):
            kwargs[name] = _build(tp, value or {}, f"{prefix}{name}.")
        else:
            kwargs[name] = _coerce(f"{prefix}{name}", value, tp)
    return cls(**kwargs)


def _apply_env(data: dict[str, Any], environ: Mapping[str, str]) -> None:
    for name, raw in environ.items():
        if not name.startswith(ENV_PREFIX):
            continue
        path = [p.lower() for p in name[len(ENV_PREFIX) :].split("__")]
        node = data
        for part in path[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(".".join(path), f"environment {name} addresses a non-section")
            node = child
        node[path[-1]] = yaml.safe_load(raw)


def _check(s: Settings) -> None:
    """Cross-field and range checks."""

    def need(ok: bool, key: str, problem: str, allowed: str) -> None:
        if not ok:
            raise ConfigError(key, problem, allowed)

    i = s.index
    need(0 <= i.max_distance <= 16, "index.max_distance", "out of range", "0..16")
    if i.layout == "permuted":
        r = i.blocks or i.max_distance + 2
        need(i.max_distance < r <= 16, "index.blocks", "out of range", "max_distance+1..16")
    need(i.candidate_distance >= i.max_distance, "index.candidate_distance",
         "must be at least index.max_distance", f">= {i.max_distance}")
    need(i.anchor_postings >= 1, "index.anchor_postings", "out of range", ">= 1")
    need(i.anchors_stored >= 0, "index.anchors_stored", "out of range", ">= 0")
    need(i.max_candidates >= 1, "index.max_candidates", "out of range", ">= 1")
    need(i.short_chars >= 0, "index.short_chars", "out of range", ">= 0")
    need(i.very_short_chars >= 0, "index.very_short_chars", "out of range", ">= 0")
    f = s.fingerprint
    need(1 <= f.ngram <= 4, "fingerprint.ngram", "out of range", "1..4")
    need(2 <= f.anchor_ngram <= 8, "fingerprint.anchor_ngram", "out of range", "2..8")
    need(1 <= f.anchor_window <= 64, "fingerprint.anchor_window", "out of range", "1..64")
    _check_strategy(f, s.normalize, need)
    v = s.verify
    need(0.0 < v.min_jaccard <= 1.0, "verify.min_jaccard", "out of range", "(0, 1]")
    need(0.0 < v.min_containment <= 1.0, "verify.min_containment", "out of range", "(0, 1]")
    need(v.max_length_ratio >= 1.0, "verify.max_length_ratio", "out of range", ">= 1")
    need(0.0 < v.min_aligned <= 1.0, "verify.min_aligned", "out of range", "(0, 1]")
    need(v.short_chars >= 0, "verify.short_chars", "out of range", ">= 0")
    need(v.min_passage_chars > 2, "verify.min_passage_chars", "out of range",
         ">= 3 (a typo changes up to 2 characters)")
    need(v.boilerplate_messages >= 1, "verify.boilerplate_messages", "out of range", ">= 1")
    need(v.boilerplate_generation >= 1, "verify.boilerplate_generation", "out of range", ">= 1")
    e = s.exact
    need(0.0 < e.false_positive_rate < 0.5, "exact.false_positive_rate", "out of range",
         "(0, 0.5)")
    need(e.expected_rate_per_s > 0, "exact.expected_rate_per_s", "out of range", "> 0")
    need(2 <= e.generations <= 64, "exact.generations", "out of range", "2..64")
    need(s.window.seconds > 0, "window.seconds", "out of range", "> 0")
    need(s.engine.batch_size >= 1, "engine.batch_size", "out of range", ">= 1")
    need(s.input.max_bytes >= 1, "input.max_bytes", "out of range", ">= 1")
    need(s.input.max_chars >= 1, "input.max_chars", "out of range", ">= 1")
    need(s.input.max_json_depth >= 1, "input.max_json_depth", "out of range", ">= 1")
    _check_kafka(s.kafka, need)
    _check_topology(s, need)
    _check_scale(s, need)
    need(0 <= s.metrics.port <= 65535, "metrics.port", "out of range", "0..65535")
    need(s.metrics.dedup_window_s > 0, "metrics.dedup_window_s", "out of range", "> 0")
    _check_metrics_security(s.metrics, need)


def _check_metrics_security(m: MetricsSettings, need: Any) -> None:
    need((m.tls_certfile is None) == (m.tls_keyfile is None),
         "metrics.tls_keyfile" if m.tls_keyfile is None else "metrics.tls_certfile",
         "TLS needs both a certificate and its key", "metrics.tls_certfile and tls_keyfile")
    for key in ("tls_certfile", "tls_keyfile"):
        path = getattr(m, key)
        need(path is None or Path(path).is_file(), f"metrics.{key}", f"no such file: {path}",
             "a readable PEM file")
    sources = [m.basic_auth_password_env, m.basic_auth_password_file]
    if m.basic_auth_user:
        need(sum(bool(x) for x in sources) == 1, "metrics.basic_auth_password_env",
             "metrics.basic_auth_user needs exactly one password source",
             "metrics.basic_auth_password_env (a variable name) or basic_auth_password_file")
    else:
        need(not any(sources), "metrics.basic_auth_user",
             "a basic-auth password source is set without a user", "a user name")


def _check_strategy(f: FingerprintSettings, n: NormalizeSettings, need: Any) -> None:
    need(f.strategy not in STATS_STRATEGIES or bool(f.stats), "fingerprint.stats",
         f"fingerprint.strategy {f.strategy} needs fitted corpus statistics",
         "a file written by `stream-dedup fit INPUT -o STATS`")
    need(1 <= f.shingle_width <= 8, "fingerprint.shingle_width", "out of range", "1..8")
    need(1 <= f.top_m <= 1000, "fingerprint.top_m", "out of range", "1..1000")
    need(0.0 < f.mu <= 10.0, "fingerprint.mu", "out of range", "(0, 10]")
    need(0.0 < f.drpkp_share <= 1.0, "fingerprint.drpkp_share", "out of range", "(0, 1]")
    need(n.paragraphs or not f.title, "fingerprint.title",
         "a title is the first paragraph: needs normalize.paragraphs: true", "false")
    need(n.paragraphs or f.strategy != "drpkp", "normalize.paragraphs",
         "fingerprint.strategy drpkp fingerprints paragraphs", "true")


def _check_kafka(k: KafkaSettings, need: Any) -> None:
    need(bool(k.bootstrap_servers.strip()), "kafka.bootstrap_servers", "is empty", "host:port")
    need(bool(k.input_topics) and all(k.input_topics), "kafka.input_topics",
         "needs at least one topic name", "a list of topic names")
    outputs = {"kafka.output_topic": k.output_topic, "kafka.dead_letter_topic":
               k.dead_letter_topic, "kafka.duplicates_topic": k.duplicates_topic}
    for key, topic in outputs.items():
        need(topic != "", key, "is empty", "a topic name" + (" or null" if "dup" in key else ""))
        need(topic not in k.input_topics, key, f"'{topic}' is also an input topic (a loop)",
             "a topic not in kafka.input_topics")
    named = [t for t in outputs.values() if t]
    need(len(set(named)) == len(named), "kafka.dead_letter_topic",
         "output, duplicates and dead-letter topics must differ", "three distinct names")
    need(k.poll_batch_size >= 1, "kafka.poll_batch_size", "out of range", ">= 1")
    need(k.batch_wait_ms >= 0, "kafka.batch_wait_ms", "out of range", ">= 0")
    need(k.fetch_min_bytes >= 1, "kafka.fetch_min_bytes", "out of range", ">= 1")
    need(k.session_timeout_ms < k.max_poll_interval_ms, "kafka.session_timeout_ms",
         "must be below kafka.max_poll_interval_ms", f"< {k.max_poll_interval_ms}")
    need(k.session_timeout_ms >= 1000, "kafka.session_timeout_ms", "out of range", ">= 1000")
    for key in ("produce_timeout_s", "commit_timeout_s", "retry_backoff_s", "shutdown_timeout_s"):
        need(getattr(k, key) > 0, f"kafka.{key}", "out of range", "> 0")
    need(k.retry_backoff_max_s >= k.retry_backoff_s, "kafka.retry_backoff_max_s",
         "must be at least kafka.retry_backoff_s", f">= {k.retry_backoff_s}")
    need(k.linger_ms >= 0, "kafka.linger_ms", "out of range", ">= 0")
    need(k.partitions >= 1, "kafka.partitions", "out of range", ">= 1")
    need(k.replication_factor >= 1, "kafka.replication_factor", "out of range", ">= 1")
    _check_kafka_security(k, need)


def _check_scale(s: Settings, need: Any) -> None:
    c, k = s.scale, s.kafka
    try:
        names = {c.changelog_for(k.group_id, t) for t in k.input_topics}
    except (KeyError, IndexError, ValueError):
        names = set()
    need(bool(names) and "{topic}" in c.changelog_topic, "scale.changelog_topic",
         f"'{c.changelog_topic}' is not a topic name template",
         "a name with {topic} and optionally {group_id}, e.g. {group_id}-{topic}-changelog")
    clash = names & {*k.input_topics, k.output_topic, k.dead_letter_topic, k.duplicates_topic}
    need(not clash, "scale.changelog_topic",
         f"names a topic the service also reads or writes ({', '.join(sorted(clash))})",
         "a topic of its own")
    need(c.restore_timeout_s > 0, "scale.restore_timeout_s", "out of range", "> 0")
    need(c.checkpoint_max_age_s >= 0, "scale.checkpoint_max_age_s", "out of range",
         ">= 0 (0: always restore in full)")
    need(1 << 20 <= c.changelog_max_record_bytes <= 1 << 30, "scale.changelog_max_record_bytes",
         "out of range", "1048576..1073741824")


def _check_topology(s: Settings, need: Any) -> None:
    t, k = s.topology, s.kafka
    names = {"topology.probes_topic": t.probes_topic, "topology.answers_topic": t.answers_topic,
             "topology.originals_topic": t.originals_topic}
    taken = {*k.input_topics, k.output_topic, k.dead_letter_topic, k.duplicates_topic}
    for key, topic in names.items():
        need(bool(topic), key, "is empty", "a topic name")
        need(topic not in taken, key, f"'{topic}' is also a kafka.* topic",
             "a topic of its own")
    need(len(set(names.values())) == 3, "topology.originals_topic",
         "probes, answers and originals topics must differ", "three distinct names")
    need(t.probes_partitions >= 1, "topology.probes_partitions", "out of range", ">= 1")
    need(t.join_partitions >= 1, "topology.join_partitions", "out of range", ">= 1")


def _check_kafka_security(k: KafkaSettings, need: Any) -> None:
    """Consistency of the security keys; whether the password source holds a password is checked
    when the clients are made (`kafka.security.client_security`), so configs stay loadable."""
    sasl = k.security_protocol.startswith("SASL_")
    ssl = k.security_protocol in ("SSL", "SASL_SSL")
    if sasl:
        need(bool(k.sasl_username), "kafka.sasl_username",
             f"kafka.security_protocol {k.security_protocol} needs a user name", "a user name")
        need(bool(k.sasl_password_env) != bool(k.sasl_password_file), "kafka.sasl_password_env",
             f"kafka.security_protocol {k.security_protocol} needs exactly one password source",
             "kafka.sasl_password_env (a variable name) or kafka.sasl_password_file (a path)")
    else:
        for key in ("sasl_username", "sasl_password_env", "sasl_password_file"):
            need(getattr(k, key) is None, f"kafka.{key}",
                 f"is set but kafka.security_protocol {k.security_protocol} uses no SASL",
                 "SASL_SSL or SASL_PLAINTEXT, or null")
    for key in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
        path = getattr(k, key)
        if path is None:
            continue
        need(ssl, f"kafka.{key}", f"is set but kafka.security_protocol {k.security_protocol} "
             "uses no TLS", "SSL or SASL_SSL, or null")
        need(Path(path).is_file(), f"kafka.{key}", f"no such file: {path}", "a readable PEM file")
    need((k.ssl_certfile is None) == (k.ssl_keyfile is None),
         "kafka.ssl_keyfile" if k.ssl_keyfile is None else "kafka.ssl_certfile",
         "mutual TLS needs both a client certificate and its key",
         "kafka.ssl_certfile and kafka.ssl_keyfile together")


def settings_from_dict(
    data: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> Settings:
    """Build and check settings from a parsed config mapping plus environment overrides."""
    merged: dict[str, Any] = {k: dict(v) if isinstance(v, Mapping) else v for k, v in data.items()}
    _apply_env(merged, os.environ if environ is None else environ)
    settings = _build(Settings, merged, "")
    _check(settings)
    return settings


def load_config(path: str | Path | None, environ: Mapping[str, str] | None = None) -> Settings:
    """Load `path` (None: built-in defaults) with environment overrides, or raise ConfigError."""
    data: Any = {}
    if path is not None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigFileError(str(path),
                                  f"cannot read the config file: {exc.strerror}") from None
        try:
            data = yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            problem = getattr(exc, "problem", None) or "not valid YAML"
            context = getattr(exc, "context", None)
            detail = f"{context}, {problem}" if context else problem
            raise ConfigFileError(str(path), f"not valid YAML ({detail})",
                                  mark.line + 1 if mark else None) from None
    return settings_from_dict(data, environ)
