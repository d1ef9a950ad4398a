"""The one place that turns `kafka.*` security settings into client settings.

`client_security(settings)` is passed (``**``) to every kafka-python client the project makes:
the service's consumer, the admin client and the short-lived readers of `topics.py`, the
`produce` command; `rdkafka_security(settings)` holds the same for the service's producer
(librdkafka, `sink.py`). The password is read from its environment variable or file each time
(a rotated Kubernetes secret is picked up by the next client) and handed to the client only
there.

`explain(exc)` turns the errors a secured connection fails with into one line that names the
cause: authentication refused, or the broker certificate not trusted.
"""

from __future__ import annotations

import logging
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from kafka.errors import KafkaError

from ..config import KafkaSettings
from ..errors import ServiceError
from ..ops.secret import Secret, read_secret
from .retry import GaveUp

AUTH_HINT = ("check kafka.sasl_username, the password in kafka.sasl_password_env / "
             "kafka.sasl_password_file and kafka.sasl_mechanism")
TLS_HINT = ("check kafka.ssl_cafile (the CA that signed the broker certificate) and "
            "kafka.ssl_check_hostname")


def sasl_password(k: KafkaSettings, environ: Mapping[str, str] | None = None) -> Secret:
    return read_secret("kafka.sasl_password_env", k.sasl_password_env,
                       "kafka.sasl_password_file", k.sasl_password_file, environ)


def client_security(k: KafkaSettings, environ: Mapping[str, str] | None = None
                    ) -> dict[str, Any]:
    """kafka-python keyword arguments for `k.security_protocol` (consumer, producer, admin)."""
    out: dict[str, Any] = {"security_protocol": k.security_protocol}
    if k.security_protocol in ("SSL", "SASL_SSL"):
        out.update(ssl_check_hostname=k.ssl_check_hostname, ssl_cafile=k.ssl_cafile,
                   ssl_certfile=k.ssl_certfile, ssl_keyfile=k.ssl_keyfile)
    if k.security_protocol.startswith("SASL_"):
        out.update(sasl_mechanism=k.sasl_mechanism, sasl_plain_username=k.sasl_username,
                   sasl_plain_password=sasl_password(k, environ).reveal())
    return out


def rdkafka_security(k: KafkaSettings, environ: Mapping[str, str] | None = None
                     ) -> dict[str, Any]:
    """The same settings as librdkafka properties (the service's producer, `sink.py`)."""
    out: dict[str, Any] = {"security.protocol": k.security_protocol}
    if k.security_protocol in ("SSL", "SASL_SSL"):
        out["ssl.endpoint.identification.algorithm"] = "https" if k.ssl_check_hostname else "none"
        for key, path in (("ssl.ca.location", k.ssl_cafile),
                          ("ssl.certificate.location", k.ssl_certfile),
                          ("ssl.key.location", k.ssl_keyfile)):
            if path:
                out[key] = path
    if k.security_protocol.startswith("SASL_"):
        out.update({"sasl.mechanism": k.sasl_mechanism, "sasl.username": k.sasl_username,
                    "sasl.password": sasl_password(k, environ).reveal()})
    return out


def describe(k: KafkaSettings) -> str:
    """The security settings for a log line: protocol, mechanism and user, no secret."""
    if k.security_protocol.startswith("SASL_"):
        return f"{k.security_protocol} {k.sasl_mechanism} user={k.sasl_username}"
    if k.security_protocol == "SSL" and k.ssl_certfile:
        return "SSL (mutual TLS)"
    return k.security_protocol


def is_auth_failure(exc: BaseException) -> bool:
    name = type(exc).__name__
    return "Authentication" in name or "SaslAuth" in name


def is_tls_failure(exc: BaseException) -> bool:
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, ssl.SSLError) or "CERTIFICATE_VERIFY_FAILED" in str(e) \
                or "certificate verify failed" in str(e):
            return True
        e = e.__cause__ or e.__context__
    return False


def is_security_failure(exc: BaseException) -> bool:
    return isinstance(exc, KafkaError | OSError) and (is_auth_failure(exc) or is_tls_failure(exc))


class _SecurityWatch(logging.Handler):
    """Remembers the last authentication or certificate failure kafka-python logged, and holds
    back what kafka-python logs while a client connects.

    kafka-python 3.0 logs why a connection was refused (SaslAuthenticationFailedError, or
    CERTIFICATE_VERIFY_FAILED in the handshake) and then gives up bootstrapping with a bare
    KafkaTimeoutError, which is retriable: without this the service would retry a wrong password
    forever. `connect` asks the watch whether such a failure happened while it waited. Its
    own lines (several ERROR and WARNING lines for one refusal) are held while `connect` waits
    (`holds`, asked by the log handlers' filter) and logged after it only when the connection
    did not fail for a security reason: that failure is said once, by `connect`'s error.
    """

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seq = 0
        self.last: tuple[int, str, str] | None = None  # (seq, kind, message)
        self.connecting = 0
        self.held: list[logging.LogRecord] = []
        self._lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # a record that cannot be formatted says nothing about security
            return
        kind = ("auth" if "SaslAuthenticationFailed" in text or "AuthenticationFailed" in text
                else "tls" if "CERTIFICATE_VERIFY_FAILED" in text
                or "certificate verify failed" in text else None)
        if kind:
            self.seq += 1
            self.last = (self.seq, kind, text)

    def mark(self) -> int:
        return self.seq

    def since(self, mark: int) -> tuple[str, str] | None:
        last = self.last
        return (last[1], last[2]) if last and last[0] > mark else None

    def holds(self, record: logging.LogRecord) -> bool:
        """Take a kafka-python record while a client connects (True: do not emit it now)."""
        if not self.connecting or not record.name.startswith("kafka"):
            return False
        with self._lock:
            if record not in self.held:  # each root handler asks about the same record
                self.held.append(record)
        return True

    def begin(self) -> None:
        """A client starts connecting: hold kafka-python's records from now on."""
        with self._lock:
            self.connecting += 1

    def end(self, said: bool) -> None:
        """A client is done connecting: once none is, log the held records, or drop them when
        its failure was said by the caller (a refused login, a broker that did not answer)."""
        with self._lock:
            self.connecting -= 1
            if self.connecting:
                return
            held, self.held = self.held, []
        if not said:
            for record in held:
                record.__dict__.pop("kafka_passes", None)  # the handlers' filter decides anew
                logging.getLogger(record.name).handle(record)


WATCH = _SecurityWatch()
T = TypeVar("T")


def _keep_data_read_before_eof() -> None:
    """Make kafka-python hand over the bytes it read just before the broker closed the socket.

    kafka-python 3.0's `KafkaTCPTransport._read_from_sock` aborts as soon as `_sock_recv`
    returns an error and drops the data read in the same pass. A broker refusing a SASL login
    sends the SaslAuthenticate error and closes the connection right after it, so a client that
    reads late (any busy machine) finds both at once, loses the error and sees only a retriable
    "socket disconnected": the wrong password is then retried, never named. Here data read
    before that EOF is returned first; the socket stays readable at EOF, so the next pass reports
    it. Other errors are left as they were.
    """
    from kafka.net import transport

    for cls in (transport.KafkaTCPTransport, transport.KafkaSSLTransport):
        recv = cls.__dict__.get("_sock_recv")
        if recv is None or getattr(recv, "keeps_data_before_eof", False):
            continue

        def sock_recv(self: Any, recv: Callable[[Any], tuple[bytes, Exception | None]] = recv
                      ) -> tuple[bytes, Exception | None]:
            data, err = recv(self)
            eof = err is not None and err.args == ("socket disconnected",)
            return (data, None) if data and eof else (data, err)

        sock_recv.keeps_data_before_eof = True  # type: ignore[attr-defined]
        cls._sock_recv = sock_recv  # type: ignore[method-assign]


def install() -> None:
    """Watch kafka-python's log for security failures and keep the data it read before an EOF;
    `connect` does it before the first client is made (a second call changes nothing)."""
    kafka_log = logging.getLogger("kafka")
    if WATCH not in kafka_log.handlers:
        kafka_log.addHandler(WATCH)
    _keep_data_read_before_eof()


def connect(what: str, k: KafkaSettings, make: Callable[[], T],
            give_up: Callable[[], bool] = lambda: False) -> T:
    """Make a kafka-python client; a refused login or an untrusted broker certificate becomes a
    ServiceError naming the cause as soon as the broker refuses (not retried: waiting does not
    fix a password), and kafka-python's own lines about it are not logged. When `give_up()`
    turns true first (a stop requested), the wait ends with GaveUp."""
    install()
    attempt = _Attempt(make)
    try:
        return attempt.wait(what, give_up)
    except KafkaError as exc:
        attempt.said = True  # by the caller, in a line of its own
        seen = WATCH.since(attempt.mark)
        if seen is None and k.security_protocol != "PLAINTEXT":
            seen = _late_cause(attempt.mark)
        err = explain(exc, k, what, seen)
        if err is not None:
            raise err from None
        raise
    except BaseException:
        attempt.said = True  # by the caller, in a line of its own
        raise
    finally:
        attempt.finish()


class _Refused(KafkaError):
    """The broker refused a login or a certificate while a client was still bootstrapping."""


class _Attempt:
    """`make()` in a thread of its own, so that a security failure logged meanwhile ends the
    wait at once (kafka-python would go on trying until its bootstrap timeout). kafka-python's
    records are held (`WATCH`) until both the wait and `make()` are over: a client abandoned
    after a refusal goes on logging until it gives up, and is closed should it still connect."""

    def __init__(self, make: Callable[[], Any], poll_s: float = 0.1) -> None:
        self.mark = WATCH.mark()
        self.said = False  # True: the caller says why it failed (kafka-python's lines dropped)
        self.poll_s = poll_s
        self._make = make
        self._result: list[Any] = []
        self._error: list[BaseException] = []
        self._abandoned = threading.Event()
        self._left = 2  # the wait and the thread: `WATCH.end` after both
        self._lock = threading.Lock()
        WATCH.begin()
        self._thread = threading.Thread(target=self._run, name="kafka-connect", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            client = self._make()
        except BaseException as exc:
            self._error.append(exc)
        else:
            if self._abandoned.is_set():
                client.close()
            self._result.append(client)
        finally:
            self.finish()

    def wait(self, what: str, give_up: Callable[[], bool]) -> Any:
        """The client, or the error `make()` raised, or `_Refused` as soon as a security
        failure was logged, or GaveUp as soon as `give_up()`."""
        while self._thread.is_alive():
            self._thread.join(self.poll_s)
            if not self._thread.is_alive():
                break
            seen = WATCH.since(self.mark)
            if seen is not None or give_up():
                self._abandoned.set()
                if seen is None:
                    raise GaveUp(f"{what}: the broker has not answered yet")
                raise _Refused(seen[1])
        if self._error:
            raise self._error[0]
        return self._result[0]

    def finish(self) -> None:
        with self._lock:
            self._left -= 1
            last = self._left == 0
        if last:
            WATCH.end(self.said)


def _late_cause(mark: int, wait_s: float = 3.0) -> tuple[str, str] | None:
    """On a busy machine the bootstrap can time out before kafka-python has logged why the
    handshake failed; wait a moment for that line before calling the failure retriable."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        seen = WATCH.since(mark)
        if seen is not None:
            return seen
        time.sleep(0.1)
    return None


def explain(exc: BaseException, k: KafkaSettings, what: str,
            seen: tuple[str, str] | None = None) -> ServiceError | None:
    """A ServiceError naming the cause when `exc` (or what kafka-python logged meanwhile, `seen`)
    is an authentication or certificate failure, else None."""
    kind, detail = seen if seen else (None, str(exc))
    if kind == "auth" or is_auth_failure(exc):
        return ServiceError(
            f"{what}: Kafka authentication failed for user {k.sasl_username!r} "
            f"({k.sasl_mechanism} over {k.security_protocol} to {k.bootstrap_servers}): "
            f"{_short(detail)}; {AUTH_HINT}")
    if kind == "tls" or is_tls_failure(exc):
        return ServiceError(
            f"{what}: TLS handshake with the Kafka broker {k.bootstrap_servers} failed, "
            f"certificate verify failed: {_short(detail)}; {TLS_HINT}")
    return None


def _short(text: str) -> str:
    """The part of a kafka-python log line after the connection's repr."""
    return text.split(">: ", 1)[-1].strip()[:300]
