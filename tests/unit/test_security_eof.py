"""kafka-python keeps a broker's last answer when the broker closes the socket right after it.

A broker refusing a SASL login sends the SaslAuthenticate error and closes at once; kafka-python
3.0 read both in one pass and dropped the answer, so a wrong password looked like a retriable
"socket disconnected" on any busy machine. `stream_dedup.kafka.security.install` hands the data
over first and reports the end of the connection on the next read.
"""

from __future__ import annotations

import socket

import pytest
from kafka.errors import KafkaConnectionError
from kafka.net.transport import KafkaSSLTransport, KafkaTCPTransport

from stream_dedup.kafka.security import install

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def _fix_installed() -> None:
    install()


@pytest.mark.parametrize("cls", [KafkaTCPTransport, KafkaSSLTransport])
def test_fix_installed_on_both_transports(cls: type) -> None:
    assert getattr(cls.__dict__["_sock_recv"], "keeps_data_before_eof", False)


def test_answer_then_close_gives_the_answer_then_the_disconnect() -> None:
    ours, broker = socket.socketpair()
    ours.setblocking(False)
    broker.sendall(b"the SaslAuthenticate error")
    broker.close()  # answer and close both wait in the socket: the reader came late
    transport = KafkaTCPTransport(None, ours)
    try:
        assert transport._sock_recv() == (b"the SaslAuthenticate error", None)
        data, err = transport._sock_recv()
        assert data == b"" and isinstance(err, KafkaConnectionError)
    finally:
        ours.close()


def test_no_data_no_change() -> None:
    ours, broker = socket.socketpair()
    ours.setblocking(False)
    transport = KafkaTCPTransport(None, ours)
    try:
        assert transport._sock_recv() == (b"", None)  # nothing yet: no error
        broker.close()
        data, err = transport._sock_recv()
        assert data == b"" and isinstance(err, KafkaConnectionError)
    finally:
        ours.close()
