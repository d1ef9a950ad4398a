"""A client of Toxiproxy's HTTP API (deploy/toxiproxy.sh runs the server): one proxy between the
service and a broker, and the faults ("toxics") the tests put on it."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class FaultProxy:
    """The proxy `name` on the Toxiproxy server at `api` (``http://host:port``)."""

    def __init__(self, api: str, name: str, listen: str, upstream: str) -> None:
        self.api = api.rstrip("/")
        self.name = name
        self.listen = listen
        self.upstream = upstream

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.api}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            text = answer.read()
        return json.loads(text) if text.strip() else None

    def version(self) -> str:
        with urllib.request.urlopen(f"{self.api}/version", timeout=5) as answer:
            return answer.read().decode().strip()

    def create(self) -> None:
        """Make the proxy anew (one left by an earlier, killed run is deleted first)."""
        self.delete()
        self._call(
            "POST",
            "/proxies",
            {"name": self.name, "listen": self.listen, "upstream": self.upstream, "enabled": True},
        )

    def delete(self) -> None:
        try:
            self._call("DELETE", f"/proxies/{self.name}")
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                raise

    def toxics(self) -> list[dict[str, Any]]:
        return self._call("GET", f"/proxies/{self.name}/toxics")

    def add(self, name: str, kind: str, stream: str, **attributes: int) -> None:
        """A toxic of Toxiproxy's `kind` on the `stream` ("upstream": towards the broker,
        "downstream": back to the client), on every connection, open and new."""
        self._call(
            "POST",
            f"/proxies/{self.name}/toxics",
            {
                "name": name,
                "type": kind,
                "stream": stream,
                "toxicity": 1.0,
                "attributes": attributes,
            },
        )

    def remove(self, name: str) -> None:
        self._call("DELETE", f"/proxies/{self.name}/toxics/{name}")

    def clear(self) -> None:
        """No toxic left on the proxy."""
        for toxic in self.toxics():
            self.remove(toxic["name"])

    @contextmanager
    def fault(
        self, kind: str, streams: tuple[str, ...] = ("upstream", "downstream"), **attributes: int
    ) -> Iterator[None]:
        """The toxic on each of `streams` while the block runs."""
        names = [f"{kind}-{stream}" for stream in streams]
        try:
            for name, stream in zip(names, streams, strict=True):
                self.add(name, kind, stream, **attributes)
            yield
        finally:
            for name in names:
                try:
                    self.remove(name)
                except urllib.error.HTTPError as exc:
                    if exc.code != 404:
                        raise
