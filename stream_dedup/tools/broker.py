"""A local Kafka broker through the repository's `deploy/kafka.sh`, for `demo` and the benchmark.

Used as a context manager: starts the broker unless one already answers on that port, and stops it
on exit only when it started it (and `keep` is false). Java and Maven, which the broker needs, are
installed through `deploy/packages.sh` when missing, as `deploy/test.sh` does, so the first
command on a fresh machine works. The script needs a source checkout (`pip install -e .`); an
installed wheel has no `deploy/`.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import TracebackType

from ..errors import ServiceError

log = logging.getLogger(__name__)
REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "deploy" / "kafka.sh"
PACKAGES = REPO / "deploy" / "packages.sh"


def ensure_broker_tools() -> None:
    """Install Java and Maven (apt-get, one line saying so) when they are not on PATH."""
    if shutil.which("java") and shutil.which("mvn"):
        return
    if not PACKAGES.is_file():
        raise ServiceError("the local broker needs Java 17 and Maven on PATH")
    proc = subprocess.run(["bash", str(PACKAGES), "java", "mvn"], stdout=subprocess.DEVNULL,
                          stderr=sys.stderr, check=False)
    if proc.returncode != 0:
        raise ServiceError("the local broker needs Java 17 and Maven on PATH, and installing "
                           "them failed (see above)")


class LocalBroker:
    """The broker of `deploy/kafka.sh` on 127.0.0.1:`port`.

    The controller listens on `controller_port` (default `port` + 1); data and logs go to
    `run_dir` (default deploy/.run/kafka-<port>).
    """

    def __init__(self, port: int, keep: bool = False, run_dir: Path | None = None,
                 controller_port: int | None = None) -> None:
        self.port = port
        self.keep = keep
        self.started = False
        self.run_dir = run_dir
        self.env = {**os.environ, "KAFKA_PORT": str(port),
                    "KAFKA_CONTROLLER_PORT": str(controller_port or port + 1),
                    "PYTHON": sys.executable}
        if run_dir is None:
            self.env.pop("KAFKA_RUN_DIR", None)  # its own run folder, deploy/.run/kafka-<port>
        else:
            self.env["KAFKA_RUN_DIR"] = str(run_dir)

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
        ensure_broker_tools()
        log.info("starting a Kafka broker on %s (deploy/kafka.sh start)", self.bootstrap)
        self.started = True
        try:
            self._run("start")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.started and not self.keep:
            log.info("stopping the broker on %s", self.bootstrap)
            self._run("clean" if self.run_dir is None else "stop", check=False)
