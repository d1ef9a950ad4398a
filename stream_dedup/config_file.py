"""Settings from `config.yaml` and the environment, checked before anything runs.

`load_config` rejects unknown keys, checks types and allowed values, and runs the cross-field
checks, so a wrong config fails at start with the key named, never deep inside a batch.
Environment variables override single keys for containers: ``STREAM_DEDUP__STATE__PATH=/data``
sets `state.path` (double underscores separate the path; values are parsed as YAML scalars).
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import yaml

from .config import (
    STATS_STRATEGIES,
    FingerprintSettings,
    KafkaSettings,
    MetricsSettings,
    NormalizeSettings,
    Settings,
)
from .errors import ConfigError, ConfigFileError

ENV_PREFIX = "STREAM_DEDUP__"


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
    need(1 <= s.state.index_block_kb <= 64, "state.index_block_kb", "out of range", "1..64")
    need(i.capacity >= 0, "index.capacity", "out of range", ">= 0 (0: rate x window)")
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
    need(0.0 < v.min_align_score <= 1.0, "verify.min_align_score", "out of range", "(0, 1]")
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
    need(1 <= s.metrics.inspector_verdicts <= 1_000_000, "metrics.inspector_verdicts",
         "out of range", "1..1000000 (the ring is held in memory)")
    need(s.metrics.inspector_unique_every >= 1, "metrics.inspector_unique_every",
         "out of range", ">= 1")
    need(not s.metrics.inspector or s.metrics.port > 0, "metrics.inspector",
         "the inspector is served on the metrics port, which is off (metrics.port 0)",
         "false, or a metrics.port")


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
    need(k.connect_timeout_s is None or k.connect_timeout_s > 0, "kafka.connect_timeout_s",
         "out of range", "> 0, or null to wait for the broker as long as it takes")
    need(k.retry_backoff_max_s >= k.retry_backoff_s, "kafka.retry_backoff_max_s",
         "must be at least kafka.retry_backoff_s", f">= {k.retry_backoff_s}")
    need(k.linger_ms >= 0, "kafka.linger_ms", "out of range", ">= 0")
    need(k.transactional_id != "", "kafka.transactional_id", "is empty", "a name or null")
    need(1000 <= k.transaction_timeout_ms <= 900000, "kafka.transaction_timeout_ms",
         "out of range", "1000..900000 (the broker's transaction.max.timeout.ms by default)")
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
    # Under global, each stage's topics would need transactions of their own
    # (docs/exactly-once.md).
    need(k.guarantee == "at_least_once" or c.scope != "global", "kafka.guarantee",
         "exactly_once is built for scale.scope process and key, not global",
         "at_least_once with scale.scope global")
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
