"""The metrics port: `/metrics`, `/healthz` and `/readyz` on one HTTP server in a daemon thread.

- `/metrics`: the registry in Prometheus text format (prometheus-client's WSGI app: it also
  speaks OpenMetrics and gzip when the scraper asks).
- `/healthz`: 200 while the process serves HTTP at all. Orchestrators restart on its failure,
  so it checks nothing that a restart would not fix.
- `/readyz`: 200 when every readiness condition holds, else 503 with the ones that do not, one
  per line. Orchestrators stop routing and alert on it, but do not restart.

The server thread never touches the engine or the Kafka clients (neither is thread-safe): the
service records readiness in a `Readiness` from its own thread, and the HTTP thread only reads it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

ReadyCheck = Callable[[], tuple[bool, str]]
StartResponse = Callable[..., Any]


class Readiness:
    """Named conditions that must all be true for the process to be ready.

    Every condition starts false ("not yet"); the service sets each from its own thread, e.g.
    ``Readiness("state open", "broker reachable", "partitions assigned")``. Calling the object
    returns ``(ready, reason)``, the `ReadyCheck` that `serve` takes.
    """

    def __init__(self, *conditions: str) -> None:
        self._state: dict[str, tuple[bool, str]] = {c: (False, "not yet") for c in conditions}

    def set(self, condition: str, ok: bool, detail: str = "") -> None:
        if condition not in self._state:
            raise KeyError(f"unknown readiness condition {condition!r}")
        self._state[condition] = (ok, detail)

    def __call__(self) -> tuple[bool, str]:
        state = dict(self._state)  # one consistent copy: the service thread may be writing
        failing = [f"{c}: {detail or 'no'}" for c, (ok, detail) in state.items() if not ok]
        return not failing, "\n".join(failing) or "ready"


def always_ready() -> tuple[bool, str]:
    """The check of a process with nothing to wait for (file mode)."""
    return True, "ready"


class _QuietHandler(WSGIRequestHandler):
    """No access log on stderr: Prometheus scrapes every few seconds."""

    def log_message(self, format: str, *args: Any) -> None:
        return


def make_app(registry: CollectorRegistry, ready_check: ReadyCheck
             ) -> Callable[[dict[str, Any], StartResponse], Iterable[bytes]]:
    """The WSGI router of the metrics port (apart from the server so tests can call it)."""
    metrics = make_wsgi_app(registry)

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "/")
        if path == "/metrics":
            return metrics(environ, start_response)
        if path == "/healthz":
            ok, body = True, "ok"
        elif path == "/readyz":
            ok, body = ready_check()
        else:
            start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"not found: try /metrics, /healthz or /readyz\n"]
        status = "200 OK" if ok else "503 Service Unavailable"
        start_response(status, [("Content-Type", "text/plain; charset=utf-8")])
        return [(body + "\n").encode()]

    return app


@dataclass(frozen=True, slots=True)
class MetricsServer:
    """A running metrics port; `port` is the bound one (useful when 0 was asked for)."""

    address: str
    port: int
    _server: ThreadingWSGIServer
    _thread: threading.Thread

    def close(self) -> None:
        """Stop serving and release the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5.0)


def serve(registry: CollectorRegistry, port: int, address: str = "0.0.0.0",
          ready_check: ReadyCheck | None = None) -> MetricsServer:
    """Start the metrics port in a daemon thread; raises OSError when the port is taken."""
    server = make_server(address, port, make_app(registry, ready_check or always_ready),
                         ThreadingWSGIServer, handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, name="metrics-http", daemon=True)
    thread.start()
    return MetricsServer(address, server.server_address[1], server, thread)
