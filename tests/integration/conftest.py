"""Fixtures for tests against real services; everything in this folder is marked `integration`.

The Kafka broker is a real Apache Kafka started by ``deploy/kafka.sh start`` (``deploy/test.sh``
starts one on 127.0.0.1:19092 and exports ``STREAM_DEDUP_KAFKA_BOOTSTRAP``). When no broker is
configured or it does not answer, Kafka tests fail under CI (env ``CI`` set) and skip elsewhere.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

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
def unique_topic(kafka_admin, request: pytest.FixtureRequest) -> Iterator[Callable[..., str]]:
    """Factory: ``unique_topic(partitions=1, configs=None, prefix=None) -> name``.

    Creates a topic with a name unique to this call (replication factor 1), waits until every
    partition has a leader, and deletes all topics it made when the test ends.
    """
    created: list[str] = []
    test_part = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name)[:80].strip("-.") or "test"

    def make(
        partitions: int = 1, configs: dict[str, str] | None = None, prefix: str | None = None
    ) -> str:
        name = f"{prefix or test_part}-{uuid.uuid4().hex[:10]}"
        kafka_admin.create_topics(
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
            kafka_admin.delete_topics(created, raise_errors=False)
        except Exception as exc:  # a test may have left the broker down; do not mask its result
            import warnings

            warnings.warn(f"could not delete test topics {created}: {exc}", stacklevel=1)
