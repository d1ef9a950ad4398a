"""Free local ports for the demo's broker and metrics, claimed so that demos started at the same
moment on one host never pick the same one.

A port is claimed by an exclusive `flock` on a small file in the temporary directory, held for the
claimant's life: the kernel drops the lock when the process ends however it ends, so a crashed
demo never blocks a port. The port must also be free to bind (something else may use it).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import tempfile
from pathlib import Path
from typing import TextIO

from ..errors import ServiceError

SEARCH = 200  # ports tried above the preferred one before giving up


def bindable(port: int, host: str = "127.0.0.1") -> bool:
    """Whether nothing listens on host:port now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


class PortClaims:
    """Ports claimed by this process; `release` (or the end of the process) gives them back."""

    def __init__(self) -> None:
        self._held: dict[int, TextIO] = {}

    def claim(self, preferred: int) -> int:
        """`preferred`, or the first port above it that is free and claimed by no other demo."""
        for port in range(preferred, preferred + SEARCH):
            if port in self._held or port > 65535:
                continue
            lock = _lock_path(port)
            handle = open(lock, "a", encoding="ascii")  # noqa: SIM115 (held until release)
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                handle.close()
                continue
            if bindable(port):
                self._held[port] = handle
                return port
            with contextlib.suppress(OSError):
                os.unlink(lock)  # ours while locked: no claim file is left for a port in use
            handle.close()
        raise ServiceError(f"no free port in {preferred}-{preferred + SEARCH - 1}")

    def release(self) -> None:
        for port, handle in self._held.items():
            with contextlib.suppress(OSError):
                os.unlink(_lock_path(port))
            handle.close()
        self._held.clear()


def _lock_path(port: int) -> Path:
    return Path(tempfile.gettempdir()) / f"stream-dedup-port-{port}.lock"
