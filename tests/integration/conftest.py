"""Fixtures for tests against real services; everything in this folder is marked `integration`.

The Kafka broker is a real Apache Kafka started by ``deploy/kafka.sh start`` (``deploy/test.sh``
starts one on 127.0.0.1:19092 and exports ``STREAM_DEDUP_KAFKA_BOOTSTRAP``). When no broker is
configured or it does not answer, Kafka tests fail under CI (env ``CI`` set) and skip elsewhere.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fault_proxy import FaultProxy

BOOTSTRAP_ENV = "STREAM_DEDUP_KAFKA_BOOTSTRAP"
_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # This hook sees every collected item of the session, not only this folder's.
    for item in items:
        if _HERE in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.integration)


def service_unavailable(reason: str) -> None:
    """Fail under CI (a missing service there is a broken setup), skip on a developer machine."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set, so this is a failure, not a skip)", pytrace=False)
    pytest.skip(reason)


def _admin(bootstrap: str, timeout_ms: int = 10_000):
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(
        bootstrap_servers=bootstrap,
        client_id="stream-dedup-tests",
        request_timeout_ms=timeout_ms,
        bootstrap_timeout_ms=timeout_ms,
    )


@pytest.fixture(scope="session")
def kafka_bootstrap() -> str:
    """``host:port`` of a live Kafka broker, checked with an admin DescribeCluster request."""
    bootstrap = os.environ.get(BOOTSTRAP_ENV, "").strip()
    if not bootstrap:
        service_unavailable(
            f"{BOOTSTRAP_ENV} is not set: run `bash deploy/kafka.sh start` and "
            f"`export {BOOTSTRAP_ENV}=127.0.0.1:9092` (deploy/test.sh does both)"
        )
    try:
        admin = _admin(bootstrap, timeout_ms=5_000)
        try:
            meta = admin.describe_cluster()
        finally:
            admin.close()
    except Exception as exc:
        service_unavailable(
            f"no Kafka broker answers at {BOOTSTRAP_ENV}={bootstrap}: {type(exc).__name__}: {exc} "
            "(start one with `bash deploy/kafka.sh start`)"
        )
    if not meta.get("brokers"):
        service_unavailable(f"Kafka at {bootstrap} answered but lists no broker: {meta}")
    return bootstrap


@pytest.fixture(scope="session")
def kcat() -> str:
    """Path of Debian's ``kcat`` (librdkafka), an independent Kafka client for cross-checks."""
    path = shutil.which("kcat")
    if path is None:
        service_unavailable("kcat is not installed (apt-get install --no-install-recommends kcat)")
    return path


@pytest.fixture
def kafka_admin(kafka_bootstrap: str):
    """A fresh KafkaAdminClient per test: a broker restarted by one test breaks no later one."""
    admin = _admin(kafka_bootstrap)
    try:
        yield admin
    finally:
        admin.close()


@pytest.fixture
def changelogs(kafka_bootstrap):
    """Names of the changelog topics the services create, deleted when the test ends (by a
    client of its own: a test may have restarted the broker under the session's client)."""
    names: list[str] = []
    yield names
    client = _admin(kafka_bootstrap)
    try:
        client.delete_topics(names, raise_errors=False)
    finally:
        client.close()


def _topic_factory(admin, request: pytest.FixtureRequest) -> Iterator[Callable[..., str]]:
    """Factory: ``make(partitions=1, configs=None, prefix=None) -> name``.

    Creates a topic with a name unique to this call (replication factor 1), waits until every
    partition has a leader, and deletes all topics it made when the test ends.
    """
    created: list[str] = []
    test_part = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name)[:80].strip("-.") or "test"

    def make(
        partitions: int = 1, configs: dict[str, str] | None = None, prefix: str | None = None
    ) -> str:
        name = f"{prefix or test_part}-{uuid.uuid4().hex[:10]}"
        admin.create_topics(
            {
                name: {
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "configs": dict(configs or {}),
                }
            },
            wait_for_metadata=True,
        )
        created.append(name)
        return name

    yield make

    if created:
        try:
            admin.delete_topics(created, raise_errors=False)
        except Exception as exc:  # a test may have left the broker down; do not mask its result
            import warnings

            warnings.warn(f"could not delete test topics {created}: {exc}", stacklevel=1)


@pytest.fixture
def unique_topic(kafka_admin, request: pytest.FixtureRequest) -> Iterator[Callable[..., str]]:
    """Topics on the broker of `kafka_bootstrap` (`_topic_factory`)."""
    yield from _topic_factory(kafka_admin, request)


# ---------------------------------------------------------------------------------------------
# A second broker with a SASL_SSL listener (SCRAM-SHA-512 over TLS): `KAFKA_SECURE=1 deploy/kafka.sh`
# on its own ports and run folder, started once per session and stopped at its end.

SECURE_PORT_ENV = "STREAM_DEDUP_SECURE_KAFKA_PORT"  # plaintext port; controller +1, SASL_SSL +2
_SCRIPT = _HERE.parents[1] / "deploy" / "kafka.sh"


@dataclasses.dataclass(frozen=True)
class SecureBroker:
    plain_bootstrap: str  # the PLAINTEXT listener of the same broker (test setup only)
    bootstrap: str  # the SASL_SSL listener
    user: str
    password_file: Path
    cafile: Path
    run_dir: Path

    @property
    def password(self) -> str:
        return self.password_file.read_text().strip()


@pytest.fixture(scope="session")
def secure_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    """A real broker with SCRAM users over TLS; a missing broker fails under CI (`CI` set)."""
    import subprocess

    port = int(os.environ.get(SECURE_PORT_ENV, "19392"))
    run_dir = tmp_path_factory.mktemp("secure-kafka")
    env = {**os.environ, "KAFKA_SECURE": "1", "KAFKA_PORT": str(port),
           "KAFKA_CONTROLLER_PORT": str(port + 1), "KAFKA_SECURE_PORT": str(port + 2),
           "KAFKA_RUN_DIR": str(run_dir)}
    env.pop("KAFKA_SCRAM_PASSWORD", None)  # a random password for this run

    def script(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", str(_SCRIPT), command], env=env, text=True,
                              capture_output=True, timeout=600, check=False)

    if shutil.which("java") is None or shutil.which("openssl") is None:
        service_unavailable("the secured broker needs java and openssl")
    started = script("start")
    if started.returncode != 0:
        script("stop")
        service_unavailable(f"KAFKA_SECURE=1 deploy/kafka.sh start failed (exit "
                            f"{started.returncode}):\n{started.stdout}{started.stderr}"[-4000:])
    secrets = run_dir / "secrets"
    try:
        yield SecureBroker(f"127.0.0.1:{port}", f"127.0.0.1:{port + 2}",
                           (secrets / "scram.user").read_text().strip(),
                           secrets / "scram.password", secrets / "ca.pem", run_dir)
    finally:
        script("stop")


# ---------------------------------------------------------------------------------------------
# A third broker reached only through a Toxiproxy proxy (deploy/toxiproxy.sh; deploy/test.sh
# starts the server and exports its URL): the broker advertises the proxy's listen port, so that
# after bootstrap every client connection goes through the proxy too, and a fault put on the
# proxy reaches every one of them.

TOXIPROXY_ENV = "STREAM_DEDUP_TOXIPROXY_URL"
PROXIED_PORT_ENV = "STREAM_DEDUP_PROXIED_KAFKA_PORT"  # the broker's own port; controller +1
PROXY_PORT_ENV = "STREAM_DEDUP_FAULT_PROXY_PORT"  # where the proxy listens


@dataclasses.dataclass(frozen=True)
class ProxiedBroker:
    bootstrap: str  # the proxy's address: the only one clients are given
    proxy: FaultProxy
    run_dir: Path


@pytest.fixture(scope="session")
def proxied_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxiedBroker]:
    """A real broker behind a fault proxy; a missing Toxiproxy or broker fails under CI."""
    import subprocess

    api = os.environ.get(TOXIPROXY_ENV, "").strip()
    if not api:
        service_unavailable(f"{TOXIPROXY_ENV} is not set: run `bash deploy/toxiproxy.sh start` "
                            f"and `export {TOXIPROXY_ENV}=http://127.0.0.1:8474` (deploy/test.sh "
                            "does both)")
    port = int(os.environ.get(PROXIED_PORT_ENV, "19292"))
    listen = f"127.0.0.1:{os.environ.get(PROXY_PORT_ENV, '19295')}"
    proxy = FaultProxy(api, f"kafka-{port}", listen, f"127.0.0.1:{port}")
    try:
        proxy.version()
        proxy.create()
    except OSError as exc:
        service_unavailable(f"no Toxiproxy answers at {TOXIPROXY_ENV}={api}: {exc}")
    run_dir = tmp_path_factory.mktemp("proxied-kafka")
    env = {**os.environ, "KAFKA_PORT": str(port), "KAFKA_CONTROLLER_PORT": str(port + 1),
           "KAFKA_ADVERTISED_PORT": listen.rsplit(":", 1)[1], "KAFKA_RUN_DIR": str(run_dir),
           "KAFKA_SECURE": "0"}

    def script(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", str(_SCRIPT), command], env=env, text=True,
                              capture_output=True, timeout=600, check=False)

    started = script("start")
    try:
        if started.returncode != 0:
            service_unavailable(f"deploy/kafka.sh start behind the proxy failed (exit "
                                f"{started.returncode}):\n{started.stdout}{started.stderr}"[-4000:])
        yield ProxiedBroker(listen, proxy, run_dir)
    finally:
        script("stop")
        proxy.delete()


@pytest.fixture
def proxied_topic(proxied_kafka: ProxiedBroker, request: pytest.FixtureRequest
                  ) -> Iterator[Callable[..., str]]:
    """Topics on the broker behind the fault proxy (`_topic_factory`), made with no fault on."""
    proxied_kafka.proxy.clear()
    admin = _admin(proxied_kafka.bootstrap)
    topics = _topic_factory(admin, request)
    try:
        yield next(topics)
    finally:
        proxied_kafka.proxy.clear()  # a fault left on would keep the topics from being deleted
        next(topics, None)
        admin.close()
