import socket
import tempfile
from pathlib import Path

import pytest

from stream_dedup.tools.ports import PortClaims, bindable

pytestmark = pytest.mark.unit


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_port_claimed_elsewhere_or_in_use_is_skipped() -> None:
    base = _free_port()
    first, second = PortClaims(), PortClaims()
    try:
        a = first.claim(base)
        b = second.claim(base)  # another claimant (its own lock file handle) moves on
        assert b != a and b > a
        with socket.socket() as busy:
            busy.bind(("127.0.0.1", b + 1))
            busy.listen()
            assert not bindable(b + 1)
            assert second.claim(b + 1) > b + 1
    finally:
        first.release()
        second.release()
    left = [p.name for p in Path(tempfile.gettempdir()).glob("stream-dedup-port-*.lock")
            if int(p.name.split("-")[-1].split(".")[0]) in range(a, b + 3)]
    assert left == []  # neither the claims released nor the port found in use leave a file


def test_a_released_port_can_be_claimed_again() -> None:
    base = _free_port()
    claims = PortClaims()
    port = claims.claim(base)
    claims.release()
    again = PortClaims()
    try:
        assert again.claim(port) == port
    finally:
        again.release()
