"""A local Kafka broker through the repository's `deploy/kafka.sh`, for `demo` and the benchmark.

Used as a context manager: starts the broker unless one already answers on that port, and stops it
on exit only when it started it (and `keep` is false). The script needs a source checkout
(`pip install -e .`); an installed wheel has no `deploy/`.
"""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path
from types import TracebackType

from ..errors import ServiceError

log = logging.getLogger(__name__)
REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "deploy" / "kafka.sh"


class LocalBroker:
    """The broker of `deploy/kafka.sh` on 127.0.0.1:`port` (controller on `port` + 1)."""

    def __init__(self, port: int, keep: bool = False) -> None:
        self.port = port
        self.keep = keep
        self.started = False
        self.env = {**os.environ, "KAFKA_PORT": str(port), "KAFKA_CONTROLLER_PORT": str(port + 1)}
        self.env.pop("KAFKA_RUN_DIR", None)  # its own run folder, deploy/.run/kafka-<port>

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _run(self, command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        if not SCRIPT.is_file():
            raise ServiceError(f"{SCRIPT} is missing: the demo runs from a source checkout "
                               "(git clone, then pip install -e .)")
        proc = subprocess.run(["bash", str(SCRIPT), command], env=self.env, text=True,
                              capture_output=True, check=False)
        if check and proc.returncode != 0:
            raise ServiceError(f"deploy/kafka.sh {command} failed (exit {proc.returncode}):\n"
                               f"{proc.stdout}{proc.stderr}".rstrip())
        return proc

    def running(self) -> bool:
        return self._run("status", check=False).returncode == 0

    def __enter__(self) -> LocalBroker:
        if self.running():
            log.info("using the broker already running on %s", self.bootstrap)
            return self
        log.info("starting a Kafka broker on %s (deploy/kafka.sh start)", self.bootstrap)
        self._run("start")
        self.started = True
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.started and not self.keep:
            log.info("stopping the broker on %s", self.bootstrap)
            self._run("stop", check=False)
