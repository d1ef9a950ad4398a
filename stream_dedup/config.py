"""Settings: one typed, frozen tree, every section a frozen dataclass.

`config_file.load_config` builds it from `config.yaml` and the environment, checked.
`config.yaml` at the repo top documents every key with its default.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True, slots=True)
class NormalizeSettings:
    """Which decoration classes are removed; every field is a config key under `normalize`."""

    markup: bool = True
    nfkc: bool = True
    traditional_to_simplified: bool = True
    lowercase: bool = True
    retweets: bool = True
    mentions: bool = True
    tags: bool = True
    urls: bool = True
    emoticons: bool = True
    # Punctuation, symbols (emoji among them), whitespace and invisible characters.
    symbols: bool = True
    # Line breaks inside a text are kept as PARAGRAPH_BREAK (paragraph-aware fingerprints).
    paragraphs: bool = False


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

    # auto: the fewest tables that keep a query's compared entries small at `capacity`;
    # blocks: k+1 blocks, one table each; permuted: Manku's C(r, r-k) tables
    layout: Literal["auto", "blocks", "permuted"] = "auto"
    # Fingerprints the auto layout is sized for (0: exact.expected_rate_per_s x window.seconds).
    # Up to 524,288 it is 4 tables of 16-bit keys (k=3), up to ~153M 10 of 25-26 bits, beyond
    # 20 of 31-33 bits; each table costs 16 bytes a stored fingerprint.
    capacity: int = 500_000
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
    min_align_score: float = 0.6  # longer pairs of close length also, when bigrams reach this
    related_contained: bool = True  # an earlier text inside a much longer later one is related
    min_excerpt_chars: int = 20  # a later text this long inside a much longer earlier one is a dup
    # A later text that puts a passage of its own inside an earlier one is not its copy (a
    # fuller earlier text may still be: the search goes on):
    related_passage: bool = True
    min_passage_chars: int = 5  # own characters taken out and put in, the two together
    # A later text that asks with a final particle of its own (一日 / 一日呀?) is a question the
    # earlier text is not (an echo or a check), unless the earlier asks by its words; the same
    # words ending with a particle, asked once and stated once (係呀? / 係呀.), are two acts:
    related_question: bool = True
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
    # RocksDB block size of the block tables, KiB: 1 when they are far larger than the block
    # cache (a lookup reads and inflates one block: ~3x cheaper, ~2% more state than 4).
    index_block_kb: int = 4
    sync_writes: bool = False  # fsync per batch; the WAL survives a process crash without it


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """Batching of the hot path, and where the service runs the engine."""

    batch_size: int = 4000
    # `stream-dedup run` with `scale.scope: process`: child, in a process of its own while the
    # service polls and sends (`runtime/engine_process.py`); inline in the service's process.
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
    # The inspector under /inspect on this port (same TLS and basic auth): recent verdicts,
    # pairs side by side, lookups by id, the check form (`ops/inspector`). Off: nothing served.
    inspector: bool = False
    inspector_verdicts: int = 10000  # the ring of recent verdicts (and of texts) it keeps
    inspector_unique_every: int = 20  # of the plain uniques it keeps one in this many


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
    connect_timeout_s: float | None = None  # at start: give up on a broker that has not answered
    # for this long (None: wait for it, saying so at every backoff step)
    linger_ms: int = 5  # the producer gathers outputs this long into one request
    # at_least_once: outputs acknowledged, then offsets committed (a crash writes the uncommitted
    # batch again). exactly_once: a batch's outputs and offsets in one transaction
    # (`kafka/transaction.py`; read_committed consumers see each input's output once).
    guarantee: Literal["at_least_once", "exactly_once"] = "at_least_once"
    transactional_id: str | None = None  # exactly_once; None: derived from the group, the host
    # and the state path, so that a restarted instance aborts what it left open at once
    transaction_timeout_ms: int = 60000  # the broker aborts a transaction open this long
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
