"""Errors of stream-dedup.

Every error the program raises on purpose derives from one root, so the CLI can turn it into a
one-line message for people instead of a traceback::

    StreamDedupError
    ├── ConfigError        a setting is wrong: carries the key and what is allowed
    ├── InputError         an input file cannot be read at all: carries the path (and line)
    ├── StateError         the state directory cannot be opened or written (RocksDB's errors
    │                      are translated into this in one place, state/rocksdb.py)
    └── ServiceError       the streaming service cannot run as configured: a topic is missing,
                           the metrics port is taken, the local broker does not start (also
                           importable as stream_dedup.kafka.ServiceError)

Bad *records* inside an otherwise readable input are not errors: they become dead letters
(`records.DeadLetter`) with a reason, and processing goes on.
"""

from __future__ import annotations


class StreamDedupError(Exception):
    """Root of the errors stream-dedup raises on purpose."""


class ConfigError(StreamDedupError):
    """A configuration value is missing, unknown or out of range."""

    def __init__(self, key: str, problem: str, allowed: str | None = None) -> None:
        self.key = key
        self.problem = problem
        self.allowed = allowed
        text = f"config key '{key}': {problem}"
        if allowed:
            text += f" (allowed: {allowed})"
        super().__init__(text)


class ConfigFileError(ConfigError):
    """The config file itself cannot be read or parsed: named by file and line, since no key
    can be blamed."""

    def __init__(self, path: str, problem: str, line: int | None = None) -> None:
        where = f"{path} line {line}" if line is not None else path
        super().__init__(path, problem)
        self.args = (f"{where}: {problem}",)

    def __str__(self) -> str:
        return str(self.args[0])


class InputError(StreamDedupError):
    """An input file cannot be opened or decoded as a whole."""

    def __init__(self, path: str, problem: str, line: int | None = None) -> None:
        self.path = path
        self.line = line
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {problem}")


class StateError(StreamDedupError):
    """The state directory cannot be opened, read or written."""


class ServiceError(StreamDedupError):
    """The streaming service cannot run as configured: a topic is missing, the metrics port is
    taken, the broker script is not there, the broker does not start."""
