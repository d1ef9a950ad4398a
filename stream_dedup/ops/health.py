"""The metrics port: `/metrics`, `/healthz` and `/readyz` on one HTTP server in a daemon thread.

- `/metrics`: the registry in Prometheus text format (prometheus-client's WSGI app: it also
  speaks OpenMetrics and gzip when the scraper asks).
- `/healthz`: 200 while the process serves HTTP at all. Orchestrators restart on its failure,
  so it checks nothing that a restart would not fix.
- `/readyz`: 200 when every readiness condition holds, else 503 with the ones that do not, one
  per line. Orchestrators stop routing and alert on it, but do not restart.

Optionally the port speaks HTTPS (`tls_certfile`/`tls_keyfile`: the listening socket wrapped
in an `ssl.SSLContext`, as prometheus-client's own `start_http_server(certfile=, keyfile=)`
does) and asks for HTTP basic auth (`basic_auth`: a WSGI wrapper; prometheus-client has none)
on every path except `/healthz`, which liveness probes reach without credentials.

A request that fails before the application sees it (plain HTTP on the TLS port, a broken
handshake, a client gone mid-request) is one log line through the configured log format at most
every `BAD_REQUEST_LOG_EVERY_S`, with a count of the others: socketserver would print a raw
traceback on stderr for each, so anyone who can reach the port could flood the log and break
`--log-format json`.

The server thread never touches the engine or the Kafka clients (neither is thread-safe): the
service records readiness in a `Readiness` from its own thread, and the HTTP thread only reads it.
"""

from __future__ import annotations

import base64
import hmac
import logging
import ssl
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

from .secret import Secret

log = logging.getLogger(__name__)
ReadyCheck = Callable[[], tuple[bool, str]]
StartResponse = Callable[..., Any]
BAD_REQUEST_LOG_EVERY_S = 60.0


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
    """No access log on stderr: Prometheus scrapes every few seconds. A client silent for
    `timeout` seconds is dropped."""

    timeout = 30.0

    def log_message(self, format: str, *args: Any) -> None:
        return


class _QuietServer(ThreadingWSGIServer):
    """Says failed requests in the log, one line per `BAD_REQUEST_LOG_EVERY_S` (see the module
    docstring), instead of a traceback on stderr for each."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()
        self._said = -BAD_REQUEST_LOG_EVERY_S
        self._unsaid = 0

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        with self._lock:
            now = time.monotonic()
            if now - self._said < BAD_REQUEST_LOG_EVERY_S:
                self._unsaid += 1
                return
            self._said, unsaid, self._unsaid = now, self._unsaid, 0
        log.warning("metrics port: a request failed and was not answered (%s) client=%s "
                    "error_type=%s not_logged_since_last=%d", exc, client_address[0],
                    type(exc).__name__, unsaid)


WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]
INSPECTOR_PATH = "/inspect"


def make_app(registry: CollectorRegistry, ready_check: ReadyCheck,
             inspector: WsgiApp | None = None) -> WsgiApp:
    """The WSGI router of the metrics port (apart from the server so tests can call it);
    `inspector` answers under `/inspect` when given (nothing is served there otherwise)."""
    metrics = make_wsgi_app(registry)

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "/")
        if path == "/metrics":
            return metrics(environ, start_response)
        if inspector is not None and (path == INSPECTOR_PATH
                                      or path.startswith(INSPECTOR_PATH + "/")):
            return inspector(environ, start_response)
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


OPEN_PATHS = frozenset({"/healthz"})


def with_basic_auth(app: WsgiApp, user: str, password: Secret, realm: str = "stream-dedup"
                    ) -> WsgiApp:
    """`app` behind HTTP basic auth (constant-time comparison); `/healthz` stays open."""
    expected = base64.b64encode(f"{user}:{password.reveal()}".encode()).decode()

    def guarded(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO", "/") in OPEN_PATHS:
            return app(environ, start_response)
        given = environ.get("HTTP_AUTHORIZATION", "")
        scheme, _, token = given.partition(" ")
        if scheme.lower() == "basic" and hmac.compare_digest(token.strip().encode(),
                                                             expected.encode()):
            return app(environ, start_response)
        start_response("401 Unauthorized", [("Content-Type", "text/plain; charset=utf-8"),
                                            ("WWW-Authenticate", f'Basic realm="{realm}"')])
        return [b"unauthorized\n"]

    return guarded


def tls_context(certfile: str, keyfile: str) -> ssl.SSLContext:
    """A server context (TLS 1.2+) with the port's certificate; raises OSError/SSLError."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(certfile, keyfile)
    return ctx


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
          ready_check: ReadyCheck | None = None, tls: ssl.SSLContext | None = None,
          basic_auth: tuple[str, Secret] | None = None,
          inspector: WsgiApp | None = None) -> MetricsServer:
    """Start the metrics port in a daemon thread; raises OSError when the port is taken.
    `tls`: serve HTTPS with this context; `basic_auth`: (user, password) asked for;
    `inspector`: the inspector's pages under `/inspect`, behind the same TLS and auth."""
    return serve_app(make_app(registry, ready_check or always_ready, inspector), port, address,
                     tls, basic_auth)


def serve_app(app: WsgiApp, port: int, address: str = "0.0.0.0",
              tls: ssl.SSLContext | None = None,
              basic_auth: tuple[str, Secret] | None = None) -> MetricsServer:
    """Serve `app` in a daemon thread, with the metrics port's TLS, basic auth and quiet error
    handling (`stream-dedup inspect` serves the inspector alone this way)."""
    if basic_auth is not None:
        app = with_basic_auth(app, *basic_auth)
    server = make_server(address, port, app, _QuietServer, handler_class=_QuietHandler)
    if tls is not None:
        # The handshake runs on the first read in the request's own thread, under the
        # handler's timeout: a client that connects and says nothing cannot stall the port.
        server.socket = tls.wrap_socket(server.socket, server_side=True,
                                        do_handshake_on_connect=False)
    thread = threading.Thread(target=server.serve_forever, name="metrics-http", daemon=True)
    thread.start()
    return MetricsServer(address, server.server_address[1], server, thread)
