#!/usr/bin/env python3
"""Wait until a Kafka broker answers an admin DescribeCluster request (used by deploy/kafka.sh).

An open port is not enough: a KRaft broker accepts connections before it has caught up with the
metadata log and registered itself. This polls ``KafkaAdminClient.describe_cluster()`` until the
answer lists at least one broker (and, with ``--node-id``, that node), or until ``--timeout``.

Exit codes: 0 ready, 1 timed out, 2 the broker process (``--pid``) died, 3 kafka-python missing.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time


def _alive(pid: int | None) -> bool:
    if pid is None:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still "exists" for kill(0): look at /proc where there is one.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def describe(bootstrap: str, timeout_s: float) -> dict:
    """One DescribeCluster round trip with a short timeout; raises on any failure."""
    from kafka.admin import KafkaAdminClient

    ms = max(int(timeout_s * 1000), 1000)
    admin = KafkaAdminClient(
        bootstrap_servers=bootstrap,
        client_id="stream-dedup-kafka-ready",
        request_timeout_ms=ms,
        bootstrap_timeout_ms=ms,
        reconnect_backoff_max_ms=1000,
    )
    try:
        return admin.describe_cluster()
    finally:
        admin.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap", default="127.0.0.1:9092", help="host:port (default %(default)s)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds (default %(default)s)")
    p.add_argument("--interval", type=float, default=0.5, help="seconds between polls")
    p.add_argument("--pid", type=int, help="give up early when this process exits")
    p.add_argument("--node-id", type=int, help="require this broker id in the answer")
    p.add_argument("--quiet", action="store_true", help="print nothing on success")
    args = p.parse_args(argv)

    # kafka-python logs every refused connection at WARNING/ERROR: keep the output readable.
    logging.basicConfig(level=logging.CRITICAL)
    try:
        import kafka  # noqa: F401
    except ImportError:
        print("kafka_ready: kafka-python is not installed", file=sys.stderr)
        return 3

    start = time.monotonic()
    deadline = start + args.timeout
    last_error = "no attempt yet"
    attempts = 0
    while True:
        if not _alive(args.pid):
            print(f"kafka_ready: broker process {args.pid} exited", file=sys.stderr)
            return 2
        attempts += 1
        remaining = deadline - time.monotonic()
        try:
            meta = describe(args.bootstrap, min(2.0, max(remaining, 1.0)))
            ids = sorted(b.get("broker_id") for b in meta.get("brokers", []))
            if ids and (args.node_id is None or args.node_id in ids):
                if not args.quiet:
                    print(
                        f"kafka_ready: {args.bootstrap} answered after "
                        f"{time.monotonic() - start:.1f}s ({attempts} polls): "
                        f"cluster_id={meta.get('cluster_id')} brokers={ids} "
                        f"controller={meta.get('controller_id')}"
                    )
                return 0
            last_error = f"describe_cluster listed brokers {ids}"
        except Exception as exc:  # any failure means "not ready yet"
            last_error = f"{type(exc).__name__}: {exc}"
        if time.monotonic() + args.interval > deadline:
            print(
                f"kafka_ready: {args.bootstrap} not ready after {args.timeout:.0f}s "
                f"({attempts} polls); last error: {last_error}",
                file=sys.stderr,
            )
            return 1
        time.sleep(args.interval)


if __name__ == "__main__":
    sys.exit(main())
