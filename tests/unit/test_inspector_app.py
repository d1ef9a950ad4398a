"""The inspector's pages through their WSGI application: filters, pairs, lookups, the check
form, escaping of hostile texts, and how it sits on the metrics port (auth, off)."""

import base64
import io
from urllib.parse import urlencode

import pytest
from prometheus_client import CollectorRegistry

from stream_dedup.config import Settings
from stream_dedup.ops.health import make_app, with_basic_auth
from stream_dedup.ops.inspector.app import Inspector, reason_choices, select
from stream_dedup.ops.inspector.render import clip, visible
from stream_dedup.ops.recent import RecentVerdicts
from stream_dedup.ops.secret import Secret
from stream_dedup.records import Decision, Verdict

pytestmark = pytest.mark.unit

HOSTILE = '<script>window.pwned=1</script><img src=x onerror="pwned=1">\u202eabc\u200b\ud800'


def _call(app, path: str, query: dict | None = None, form: dict | None = None,
          headers: dict | None = None) -> tuple[str, dict, str]:
    body = urlencode(form or {}).encode()
    environ = {"PATH_INFO": path, "QUERY_STRING": urlencode(query or {}),
               "REQUEST_METHOD": "POST" if form is not None else "GET",
               "CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body),
               "HTTP_HOST": "127.0.0.1:9108", **(headers or {})}
    got: dict = {}

    def start_response(status, hdrs):
        got["status"], got["headers"] = status, dict(hdrs)

    out = b"".join(app(environ, start_response)).decode()
    return got["status"], got["headers"], out


@pytest.fixture
def recent() -> RecentVerdicts:
    ring = RecentVerdicts(100, unique_every=1)
    verdicts = [Verdict("a", Decision.UNIQUE, "unique"),
                Verdict("b", Decision.NEAR, "near: jaccard", "a", 2, 0.9),
                Verdict("c", Decision.UNIQUE, "related: number", "a", 4, 0.7, "number"),
                Verdict("h", Decision.UNIQUE, "unique")]
    ring.add(verdicts, ["深市今天上涨了百分之三", "深市今天上涨了百分之三！", "深市今天上涨了百分之五",
                        HOSTILE], [1_700_000_000_000, 1_700_000_060_000, 1_700_000_120_000,
                                   1_700_000_180_000])
    ring.candidates_tried("b", ["a"])
    return ring


def test_visible_escapes_and_marks_hidden_characters() -> None:
    out = str(visible(HOSTILE))
    assert "<script>" not in out and "&lt;script&gt;" in out and "<img" not in out
    assert "U+202E" in out and "U+200B" in out and "U+D800" in out
    assert "\u202e" not in out and "\ud800" not in out


def test_clip_says_how_much_was_cut() -> None:
    assert clip("啊" * 200, 10) == "啊" * 10 + "… (+190 characters)"
    assert clip("短", 10) == "短"


def test_filters_by_verdict_reason_and_time(recent) -> None:
    seen = recent.seen()
    assert [s.verdict.id for s in select(seen, "related", "", None, None)] == ["c"]
    assert [s.verdict.id for s in select(seen, "", "near", None, None)] == ["b"]
    assert [s.verdict.id for s in select(seen, "", "", 1_700_000_030_000, 1_700_000_130_000)] \
        == ["c", "b"]
    app = Inspector(Settings(), recent)
    status, _, page = _call(app, "/inspect", {"verdict": "near"})
    assert status == "200 OK" and page.count('class="row"') == 1 and "/inspect/message?id=b" in page
    _, _, page = _call(app, "/inspect", {"since": "2023-11-14T22:14:30"})
    assert page.count('class="row"') == 2  # c (22:15:20) and h (22:16:20), UTC
    status, _, _ = _call(app, "/inspect", {"verdict": "bogus"})
    assert status.startswith("400")


def test_reason_choices_are_stage_words_and_reasons_without_figures(recent) -> None:
    assert reason_choices(recent.seen()) == ["near", "near: jaccard", "related", "related: number",
                                             "unique"]


def test_pages_escape_hostile_texts_and_forbid_other_scripts(recent) -> None:
    app = Inspector(Settings(), recent)
    for query in ({}, {"verdict": "unique"}):
        _, headers, page = _call(app, "/inspect", query)
        assert "<script>window" not in page and "onerror=\"pwned" not in page
        assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in page
        assert "script-src 'nonce-" in headers["Content-Security-Policy"]
    _, _, page = _call(app, "/inspect/message", {"id": "h"})
    assert "<script>window" not in page and "U+202E" in page


def test_message_shows_verdict_candidates_and_the_pair_by_class(recent) -> None:
    app = Inspector(Settings(), recent)
    _, _, page = _call(app, "/inspect/message", {"id": "c"})
    assert "related: number" in page and 'class="k-number"' in page
    assert "三" in page and "五" in page
    _, _, page = _call(app, "/inspect/message", {"id": "b"})
    assert 'href="/inspect/message?id=a"' in page.split('id="candidates"')[1].split("</td>")[0]
    _, _, page = _call(app, "/inspect/message", {"id": "nobody"})
    assert 'id="missing"' in page


def test_check_form_runs_check(recent) -> None:
    app = Inspector(Settings(), recent)
    status, _, page = _call(app, "/inspect/check",
                            form={"first": "深市今天上涨了百分之三", "second": "深市昨天上涨了百分之三"})
    assert status == "200 OK" and "related: date" in page and 'class="k-date"' in page


def test_a_form_from_another_site_is_refused(recent) -> None:
    app = Inspector(Settings(), recent)
    status, _, _ = _call(app, "/inspect/check", form={"first": "a", "second": "b"},
                         headers={"HTTP_ORIGIN": "https://elsewhere.example"})
    assert status.startswith("400")


def test_on_the_metrics_port_behind_basic_auth_and_absent_when_off(recent) -> None:
    inspector = Inspector(Settings(), recent)
    app = with_basic_auth(make_app(CollectorRegistry(), lambda: (True, "ready"), inspector),
                          "judge", Secret("pw"))
    status, _, _ = _call(app, "/inspect")
    assert status.startswith("401")
    token = base64.b64encode(b"judge:pw").decode()
    status, _, page = _call(app, "/inspect/message", {"id": "b"},
                            headers={"HTTP_AUTHORIZATION": f"Basic {token}"})
    assert status == "200 OK" and "near: jaccard" in page
    off = make_app(CollectorRegistry(), lambda: (True, "ready"))
    for path in ("/inspect", "/inspect/message", "/inspect/check"):
        assert _call(off, path)[0].startswith("404")
