"""Security settings: config checks, the kafka-python kwargs, secrets that never show, and the
metrics port over TLS with basic auth."""

from __future__ import annotations

import base64
import json
import logging
import shutil
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from kafka.errors import KafkaTimeoutError
from prometheus_client import CollectorRegistry, Counter

from stream_dedup.cli.parser import build_parser
from stream_dedup.config import Settings
from stream_dedup.config_file import settings_from_dict
from stream_dedup.errors import ConfigError, ServiceError
from stream_dedup.kafka.security import client_security, connect, describe, rdkafka_security
from stream_dedup.ops.health import serve, tls_context, with_basic_auth
from stream_dedup.ops.inspector.app import Inspector
from stream_dedup.ops.logs import JsonFormatter
from stream_dedup.ops.recent import RecentVerdicts
from stream_dedup.ops.secret import Secret, read_secret

pytestmark = pytest.mark.unit
PASSWORD = "s3cr3t-Pa55-word"
SASL = {"security_protocol": "SASL_SSL", "sasl_username": "alice",
        "sasl_password_env": "KAFKA_PW"}


def kafka(environ: dict[str, str] | None = None, **keys: object):
    return settings_from_dict({"kafka": keys}, environ or {}).kafka


def test_password_from_env_or_file(tmp_path: Path) -> None:
    assert read_secret("a", "PW", "b", None, {"PW": PASSWORD}).reveal() == PASSWORD
    f = tmp_path / "pw"
    f.write_text(PASSWORD + "\n")
    assert read_secret("a", None, "b", str(f), {}).reveal() == PASSWORD
    with pytest.raises(ConfigError, match="KAFKA_PW is not set"):
        client_security(kafka(**SASL), environ={})
    with pytest.raises(ConfigError, match="cannot read the password file"):
        read_secret("a", None, "kafka.sasl_password_file", str(tmp_path / "none"), {})


@pytest.mark.parametrize(("keys", "key", "problem"), [
    ({"security_protocol": "SASL_SSL", "sasl_password_env": "X"}, "kafka.sasl_username",
     "needs a user name"),
    ({"security_protocol": "SASL_SSL", "sasl_username": "a"}, "kafka.sasl_password_env",
     "exactly one password source"),
    ({**SASL, "sasl_password_file": "/x"}, "kafka.sasl_password_env", "exactly one"),
    ({"sasl_username": "a"}, "kafka.sasl_username", "uses no SASL"),
    ({"security_protocol": "SSL", "ssl_cafile": "/no/such.pem"}, "kafka.ssl_cafile",
     "no such file"),
    ({"ssl_cafile": __file__}, "kafka.ssl_cafile", "uses no TLS"),
    ({"security_protocol": "SSL", "ssl_certfile": __file__}, "kafka.ssl_keyfile",
     "both a client certificate and its key"),
    ({"security_protocol": "SASL_SSL", "sasl_mechanism": "GSSAPI"}, "kafka.sasl_mechanism",
     "not allowed"),
    ({"sasl_password": PASSWORD}, "kafka.sasl_password", "unknown key"),
])
def test_cross_checks_name_the_key(keys: dict, key: str, problem: str) -> None:
    with pytest.raises(ConfigError) as err:
        kafka(**keys)
    assert err.value.key == key and problem in str(err.value)
    assert PASSWORD not in str(err.value)


def test_one_function_builds_the_kwargs_of_every_client() -> None:
    assert client_security(kafka()) == {"security_protocol": "PLAINTEXT"}
    k = kafka(**SASL, ssl_cafile=__file__, ssl_check_hostname=False,
              sasl_mechanism="SCRAM-SHA-256")
    kw = client_security(k, {"KAFKA_PW": PASSWORD})
    assert kw == {"security_protocol": "SASL_SSL", "ssl_check_hostname": False,
                  "ssl_cafile": __file__, "ssl_certfile": None, "ssl_keyfile": None,
                  "sasl_mechanism": "SCRAM-SHA-256", "sasl_plain_username": "alice",
                  "sasl_plain_password": PASSWORD}
    mtls = kafka(security_protocol="SSL", ssl_cafile=__file__, ssl_certfile=__file__,
                 ssl_keyfile=__file__)
    assert client_security(mtls)["ssl_certfile"] == __file__
    assert describe(mtls) == "SSL (mutual TLS)"
    assert describe(k) == "SASL_SSL SCRAM-SHA-256 user=alice"
    # The settings name where the password is, never hold it.
    assert PASSWORD not in repr(settings_from_dict({"kafka": SASL}, {"KAFKA_PW": PASSWORD}))


def test_the_producer_gets_the_same_settings_as_librdkafka_properties() -> None:
    assert rdkafka_security(kafka()) == {"security.protocol": "PLAINTEXT"}
    k = kafka(**SASL, ssl_cafile=__file__, ssl_check_hostname=False,
              sasl_mechanism="SCRAM-SHA-256")
    assert rdkafka_security(k, {"KAFKA_PW": PASSWORD}) == {
        "security.protocol": "SASL_SSL", "ssl.endpoint.identification.algorithm": "none",
        "ssl.ca.location": __file__, "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "alice", "sasl.password": PASSWORD}
    mtls = rdkafka_security(kafka(security_protocol="SSL", ssl_certfile=__file__,
                                  ssl_keyfile=__file__))
    assert mtls == {"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "https",
                    "ssl.certificate.location": __file__, "ssl.key.location": __file__}


def test_env_override_of_security_keys() -> None:
    env = {"STREAM_DEDUP__KAFKA__SECURITY_PROTOCOL": "SASL_SSL",
           "STREAM_DEDUP__KAFKA__SASL_MECHANISM": "PLAIN",
           "STREAM_DEDUP__KAFKA__SASL_USERNAME": "bob",
           "STREAM_DEDUP__KAFKA__SASL_PASSWORD_FILE": "/run/secrets/kafka"}
    k = settings_from_dict({}, env).kafka
    assert (k.security_protocol, k.sasl_mechanism, k.sasl_username) == ("SASL_SSL", "PLAIN", "bob")


def test_help_never_shows_a_password(capsys: pytest.CaptureFixture[str]) -> None:
    for args in (["--help"], ["run", "--help"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(args)
    assert PASSWORD not in capsys.readouterr().out


def test_logged_auth_failure_becomes_a_clear_error() -> None:
    k = kafka(**SASL)

    def refused():
        logging.getLogger("kafka.net.connection").error(
            "<conn>: Connection lost: [Error 58] SaslAuthenticationFailedError: Authentication "
            "failed during authentication due to invalid credentials with SASL mechanism X")
        raise KafkaTimeoutError("Unable to bootstrap from 127.0.0.1:1")

    with pytest.raises(ServiceError, match="Kafka authentication failed for user 'alice'"):
        connect("connecting the consumer", k, refused)

    def untrusted():
        logging.getLogger("kafka.net.manager").error(
            "Connection failed: Handshake failed: [SSL: CERTIFICATE_VERIFY_FAILED] certificate "
            "verify failed: self-signed certificate in certificate chain")
        raise KafkaTimeoutError("Unable to bootstrap from 127.0.0.1:1")

    with pytest.raises(ServiceError, match="certificate verify failed"):
        connect("connecting the consumer", k, untrusted)

    def down():
        raise KafkaTimeoutError("Unable to bootstrap")

    with pytest.raises(KafkaTimeoutError):  # a broker away stays retriable
        connect("connecting the consumer", k, down)


# -- the metrics port: TLS and basic auth ------------------------------------------------------

def _app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]


def test_basic_auth_wrapper() -> None:
    app = with_basic_auth(_app, "prom", Secret(PASSWORD))
    seen: list[str] = []

    def call(path: str, auth: str | None) -> str:
        environ = {"PATH_INFO": path}
        if auth:
            environ["HTTP_AUTHORIZATION"] = auth
        app(environ, lambda status, headers: seen.append(status))
        return seen[-1]

    good = "Basic " + base64.b64encode(f"prom:{PASSWORD}".encode()).decode()
    bad = "Basic " + base64.b64encode(b"prom:nope").decode()
    assert call("/metrics", good).startswith("200")
    assert call("/metrics", bad).startswith("401")
    assert call("/metrics", None).startswith("401")
    assert call("/readyz", None).startswith("401")
    assert call("/healthz", None).startswith("200")  # liveness probes need no credentials


@pytest.fixture
def cert(tmp_path: Path) -> tuple[str, str]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    crt, key = tmp_path / "m.pem", tmp_path / "m.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(key), "-out", str(crt), "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return str(crt), str(key)


def test_metrics_port_over_tls_with_basic_auth(cert: tuple[str, str]) -> None:
    registry = CollectorRegistry()
    Counter("probe_total", "a probe", registry=registry).inc()
    server = serve(registry, 0, "127.0.0.1", tls=tls_context(*cert),
                   basic_auth=("prom", Secret(PASSWORD)),
                   inspector=Inspector(Settings(), RecentVerdicts(10)))
    try:
        url = f"https://127.0.0.1:{server.port}"
        with pytest.raises(OSError):  # plain HTTP is not answered, and breaks nothing
            urllib.request.urlopen(f"http://127.0.0.1:{server.port}/healthz", timeout=5)
        ctx = ssl.create_default_context(cafile=cert[0])
        token = base64.b64encode(f"prom:{PASSWORD}".encode()).decode()
        request = urllib.request.Request(f"{url}/metrics",
                                         headers={"Authorization": f"Basic {token}"})
        with urllib.request.urlopen(request, context=ctx, timeout=10) as r:
            body = r.read().decode()
        assert "probe_total 1.0" in body and PASSWORD not in body
        request = urllib.request.Request(f"{url}/inspect",
                                         headers={"Authorization": f"Basic {token}"})
        with urllib.request.urlopen(request, context=ctx, timeout=10) as r:
            assert "Recent verdicts" in r.read().decode()  # the inspector, on the same port
        for path in ("/metrics", "/inspect", "/inspect/check"):
            with pytest.raises(urllib.error.HTTPError) as denied:
                urllib.request.urlopen(f"{url}{path}", context=ctx, timeout=10)
            assert denied.value.code == 401
        with urllib.request.urlopen(f"{url}/healthz", context=ctx, timeout=10) as r:
            assert r.status == 200
    finally:
        server.close()


def test_metrics_security_settings(cert: tuple[str, str]) -> None:
    m = settings_from_dict({"metrics": {"tls_certfile": cert[0], "tls_keyfile": cert[1],
                                        "basic_auth_user": "prom",
                                        "basic_auth_password_env": "M_PW"}}, {}).metrics
    from stream_dedup.runtime.lifecycle import metrics_security, metrics_url

    assert metrics_url(m, 9108) == "https://127.0.0.1:9108/metrics"
    with pytest.raises(ConfigError, match="M_PW is not set"):
        metrics_security(m)
    with pytest.raises(ConfigError, match=r"metrics\.tls_keyfile"):
        settings_from_dict({"metrics": {"tls_certfile": cert[0]}}, {})
    with pytest.raises(ConfigError, match="without a user"):
        settings_from_dict({"metrics": {"basic_auth_password_env": "X"}}, {})


def test_bad_requests_to_the_tls_metrics_port_are_a_few_log_lines(cert, capfd) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    logging.getLogger().addHandler(handler)
    server = serve(CollectorRegistry(), 0, "127.0.0.1", tls=tls_context(*cert))
    try:
        for i in range(1000):
            with socket.create_connection(("127.0.0.1", server.port), timeout=5) as conn:
                try:  # the server may drop the connection before all of it was sent
                    conn.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" if i % 2 else
                                 b"\x16\x03\x01\x00\x30" + bytes(range(48)))  # a broken hello
                    conn.recv(1024)
                except OSError:
                    pass
        time.sleep(0.5)  # the last handler threads finish
    finally:
        server.close()
        logging.getLogger().removeHandler(handler)
    err = capfd.readouterr().err
    lines = err.splitlines()
    assert 1 <= len(lines) <= 3 and "Traceback" not in err
    said = [json.loads(line) for line in lines]
    assert said[0]["message"].startswith("metrics port: a request failed")
