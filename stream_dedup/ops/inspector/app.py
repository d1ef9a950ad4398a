"""The inspector's WSGI application, mounted under `/inspect` on the metrics port (`health.py`),
so it shares the port's TLS and basic auth; or on a port of its own for a file run
(`stream-dedup inspect`).

Pages: `/inspect` the recent verdicts, filtered by verdict, reason and time; `/inspect/message`
one message by id (its verdict and reason, the candidates tried, the pair side by side);
`/inspect/check` runs `check` on two texts; `/inspect/audit` judges an audit sample. The pages
only read the ring of recent verdicts (`recent.RecentVerdicts`), never the engine or its state;
a check runs on an engine of its own, one at a time.

A form is accepted only from the inspector's own pages: a POST whose Origin names another host
is refused, so a page elsewhere cannot label pairs with a judge's stored credentials."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ...config import Settings
from ...errors import StreamDedupError
from ...tools.explain import Explained, explain
from ..recent import RecentVerdicts, Seen
from .align import aligned
from .judging import Judging
from .render import PREFIX, page

VERDICT_KINDS = ("exact", "near", "related", "unique")
MAX_FORM_BYTES = 1 << 20  # a check of two long texts fits; more is refused
MAX_ROWS = 500  # verdicts listed on one page, newest first
StartResponse = Callable[..., Any]


class BadRequest(Exception):
    """A request the inspector cannot answer: its message is the page's text."""


def _when_ms(value: str, field: str) -> int | None:
    """A `datetime-local` field (UTC) as epoch milliseconds; empty: None."""
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise BadRequest(f"{field}: not a date and time (YYYY-MM-DDTHH:MM)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def select(seen: list[Seen], verdict: str, reason: str, since_ms: int | None,
           until_ms: int | None) -> list[Seen]:
    """The verdicts matching every filter given (an empty one matches all). `reason` matches a
    whole reason or its stage word (`near` matches `near: containment`)."""
    out = []
    for s in seen:
        r = s.verdict.reason
        if verdict and s.kind != verdict:
            continue
        if reason and r != reason and r.split(":")[0] != reason:
            continue
        if since_ms is not None and (s.time_ms is None or s.time_ms < since_ms):
            continue
        if until_ms is not None and (s.time_ms is None or s.time_ms > until_ms):
            continue
        out.append(s)
    return out


def reason_choices(seen: list[Seen]) -> list[str]:
    """The reason filter's choices: every stage word (`near`, `related`, ...) and every whole
    reason without figures in it (`related: negation`, not `near: distance 3, ...`), so the list
    stays short however many distances and similarities the ring holds."""
    out: set[str] = set()
    for s in seen:
        reason = s.verdict.reason
        out.add(reason.split(":")[0])
        if not any(ch.isdigit() for ch in reason):
            out.add(reason)
    return sorted(out)


class Inspector:
    """The WSGI application; `recent` None: no verdicts to show (an audit file only),
    `judging` None: no audit file opened."""

    def __init__(self, settings: Settings, recent: RecentVerdicts | None,
                 judging: Judging | None = None, title: str = "stream-dedup") -> None:
        self.settings = settings
        self.recent = recent
        self.judging = judging
        self.title = title
        self._check_lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: StartResponse
                 ) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "/").removeprefix(PREFIX) or "/"
        method = environ.get("REQUEST_METHOD", "GET")
        routes = {("/", "GET"): self._verdicts, ("/message", "GET"): self._message,
                  ("/check", "GET"): self._check, ("/check", "POST"): self._check,
                  ("/audit", "GET"): self._audit, ("/audit", "POST"): self._label}
        handler = routes.get((path, method))
        if handler is None:
            return _plain(start_response, "404 Not Found", "not found: try /inspect")
        try:
            if method == "POST":
                _same_origin(environ)
                params = _form(environ)
            else:
                params = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
            status, headers, body = handler({k: v[-1] for k, v in params.items()})
        except BadRequest as exc:
            return _plain(start_response, "400 Bad Request", str(exc))
        start_response(status, headers)
        return [body]

    # -- pages --------------------------------------------------------------------------------

    def _render(self, template: str, **values: Any) -> tuple[str, list, bytes]:
        nonce = secrets.token_urlsafe(16)
        body = page(template, title=self.title, has_verdicts=self.recent is not None,
                    has_audit=self.judging is not None, nonce=nonce, **values)
        return "200 OK", [("Content-Type", "text/html; charset=utf-8"), *_hardening(nonce)], body

    def _verdicts(self, q: dict[str, str]) -> tuple[str, list, bytes]:
        verdict, reason = q.get("verdict", ""), q.get("reason", "")
        if verdict and verdict not in VERDICT_KINDS:
            raise BadRequest(f"verdict: one of {', '.join(VERDICT_KINDS)}")
        seen = self.recent.seen() if self.recent is not None else []
        chosen = select(seen, verdict, reason, _when_ms(q.get("since", ""), "since"),
                        _when_ms(q.get("until", ""), "until"))
        reasons = reason_choices(seen)
        total = self.recent.total if self.recent is not None else 0
        return self._render("verdicts.html", rows=chosen[:MAX_ROWS], shown=len(chosen),
                            held=len(seen), total=total, reasons=reasons, q=q,
                            kinds=VERDICT_KINDS)

    def _message(self, q: dict[str, str]) -> tuple[str, list, bytes]:
        ident = q.get("id", "")
        recent = self.recent
        seen = recent.find(ident) if recent is not None and ident else None
        if recent is None or seen is None:
            return self._render("message.html", ident=ident, seen=None)
        earlier = recent.text(seen.verdict.matched_id)
        pair = None
        if earlier is not None and seen.text is not None:
            pair = self._explain(earlier, seen.text)
        return self._render("message.html", ident=ident, seen=seen, pair=pair, earlier=earlier,
                            rows=aligned(pair.first, pair.second, pair.spans) if pair else [],
                            candidates=recent.candidates(ident))

    def _check(self, q: dict[str, str]) -> tuple[str, list, bytes]:
        first, second = q.get("first", ""), q.get("second", "")
        result = self._explain(first, second) if first and second else None
        return self._render("check.html", first=first, second=second, result=result,
                            rows=aligned(result.first, result.second, result.spans)
                            if result else [])

    def _explain(self, first: str, second: str) -> Explained:
        with self._check_lock:
            return explain(first, second, self.settings)

    def _audit(self, q: dict[str, str]) -> tuple[str, list, bytes]:
        judging = self.judging
        if judging is None:
            raise BadRequest("no audit file is open: stream-dedup inspect --audit PAIRS.jsonl")
        if not judging.pairs:
            return self._render("audit.html", pair=None, index=0, judging=judging)
        index = _index(q.get("i"), judging.next_unlabelled())
        if not 0 <= index < len(judging.pairs):
            raise BadRequest(f"i: 0..{len(judging.pairs) - 1}")
        pair = judging.pairs[index]
        earlier, later = pair.get("matched_text"), pair.get("text")
        result = self._explain(earlier, later) if earlier and later else None
        return self._render("audit.html", pair=pair, index=index, judging=judging,
                            precision=judging.precision(), result=result,
                            rows=aligned(result.first, result.second, result.spans)
                            if result else [])

    def _label(self, q: dict[str, str]) -> tuple[str, list, bytes]:
        judging = self.judging
        if judging is None:
            raise BadRequest("no audit file is open")
        index = _index(q.get("i"), -1)
        label = q.get("label") or None
        try:
            judging.label(index, label)
        except StreamDedupError as exc:
            raise BadRequest(str(exc)) from None
        following = judging.next_unlabelled(index)
        return "303 See Other", [("Location", f"{PREFIX}/audit?i={following}"), *_hardening()], b""


def _hardening(nonce: str = "") -> list[tuple[str, str]]:
    """No script but the page's own (the one carrying this response's nonce), nothing loaded
    from elsewhere, no framing: should a text ever slip past the escaping, it still cannot run."""
    script = f"'nonce-{nonce}'" if nonce else "'none'"
    return [("Content-Security-Policy", f"default-src 'none'; style-src 'unsafe-inline'; "
             f"script-src {script}; form-action 'self'; frame-ancestors 'none'; "
             "base-uri 'none'"),
            ("X-Content-Type-Options", "nosniff"),
            ("Referrer-Policy", "same-origin"),  # a form then says its origin (not "null")
            ("Cache-Control", "no-store")]


def _index(value: str | None, default: int) -> int:
    if value in (None, ""):
        return default
    try:
        return int(value)
    except ValueError:
        raise BadRequest("i: a pair number") from None


def _form(environ: dict[str, Any]) -> dict[str, list[str]]:
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise BadRequest("bad Content-Length") from None
    if length > MAX_FORM_BYTES:
        raise BadRequest(f"the form is over {MAX_FORM_BYTES:,} bytes")
    body = environ["wsgi.input"].read(length).decode("utf-8", "replace")
    return parse_qs(body, keep_blank_values=True)


def _same_origin(environ: dict[str, Any]) -> None:
    origin = environ.get("HTTP_ORIGIN")
    if origin and urlsplit(origin).netloc != environ.get("HTTP_HOST"):
        raise BadRequest("a form from another site is refused")


def _plain(start_response: StartResponse, status: str, text: str) -> list[bytes]:
    start_response(status, [("Content-Type", "text/plain; charset=utf-8"), *_hardening()])
    return [(text + "\n").encode("utf-8", "replace")]
