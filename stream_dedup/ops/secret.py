"""Secrets from the environment or a file, in a wrapper that never shows them.

A `Secret` prints as ``'***'`` in repr, str, f-strings, logs, tracebacks and exception messages;
only `reveal()` returns the value, at the one place that hands it to a library. Config files name
where a secret is (an environment variable, a file such as a mounted Kubernetes secret), never
the secret itself.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ..errors import ConfigError

MASK = "***"


class Secret:
    """A string that hides itself; compare with `reveal()`."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"Secret({MASK!r})"

    def __str__(self) -> str:
        return MASK

    def __format__(self, spec: str) -> str:
        return MASK

    def __reduce__(self) -> tuple:  # never pickled into a file or a child process by accident
        raise TypeError("a Secret cannot be pickled")

    def __bool__(self) -> bool:
        return bool(self._value)


def read_secret(env_key: str, env_name: str | None, file_key: str, file_path: str | None,
                environ: Mapping[str, str] | None = None) -> Secret:
    """The secret named by `env_name` (an environment variable) or held in `file_path`.

    Exactly one of the two is set (the config checks say so). Errors name the config key and the
    variable or file, never the value. A file's trailing newline is cut (`echo pw > file`).
    """
    environ = os.environ if environ is None else environ
    if env_name:
        value = environ.get(env_name, "")
        if not value:
            raise ConfigError(env_key, f"the environment variable {env_name} is not set or empty",
                              "the name of a variable that holds the password")
        return Secret(value)
    if file_path:
        try:
            value = Path(file_path).read_text(encoding="utf-8").rstrip("\r\n")
        except (OSError, UnicodeDecodeError) as exc:
            why = getattr(exc, "strerror", None) or type(exc).__name__
            raise ConfigError(file_key, f"cannot read the password file {file_path}: {why}",
                              "a readable file that holds the password") from None
        if not value:
            raise ConfigError(file_key, f"the password file {file_path} is empty",
                              "a file that holds the password")
        return Secret(value)
    raise ConfigError(env_key, "no password source", f"{env_key} or {file_key}")
