"""The inspector in a real headless Chromium: a file run opened with `stream-dedup inspect`
(filter the verdicts, open a pair, run the check form, judge an audit pair and read the file),
hostile texts from the fuzz corpus shown as text with no script run and the layout holding, and
basic auth asked for when configured. Without a browser this fails under CI and skips elsewhere.
"""

from __future__ import annotations

import base64
import gzip
import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from conftest import service_unavailable

from stream_dedup.cli.main import main
from stream_dedup.tools.inspector_browser import (
    InspectServer,
    browser_missing,
    click_and_wait,
    headless_chromium,
)

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "stream_dedup" / "data" / "sample.jsonl.gz"
FUZZ = REPO / "tests" / "data" / "fuzz" / "corpus.jsonl"
MARKUP = ['<script>window.pwned = 1</script>今天股市上涨',
          '<img src=x onerror="window.pwned = 1">北京新闻',
          '"><svg onload="window.pwned=1">',
          "\u202e右到左覆盖 abc\u200b\u200d\ufeff 隐形字符",
          "超长" * 4500]


def _hostile_texts() -> list[str]:
    """The fuzz corpus's records as text, and markup aimed at a page."""
    texts = [base64.b64decode(json.loads(line)["raw_b64"]).decode("utf-8", "replace")
             for line in FUZZ.read_text().splitlines() if line.strip()]
    return [t for t in texts if t.strip()] + MARKUP


@pytest.fixture(scope="module")
def browser():
    missing = browser_missing()
    if missing:
        service_unavailable(missing)
    driver = headless_chromium()
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict[str, Path]:
    """A file run: 1,500 sample messages then the hostile texts, its decisions, an audit."""
    tmp = tmp_path_factory.mktemp("inspect")
    with gzip.open(SAMPLE, "rt", encoding="utf-8") as f:
        lines = [next(f) for _ in range(1500)]
    hostile = [json.dumps({"id": f"hostile-{n}", "text": t}) + "\n"
               for n, t in enumerate(_hostile_texts())]
    (tmp / "in.jsonl").write_text("".join(lines + hostile), encoding="utf-8")
    (tmp / "config.yaml").write_text("metrics:\n  inspector_unique_every: 1\n")
    common = ["--config", str(tmp / "config.yaml")]
    assert main(["dedup", str(tmp / "in.jsonl"), "-o", str(tmp / "out.jsonl"), "--decisions",
                 str(tmp / "dec.jsonl"), "--quiet", *common]) == 0
    assert main(["audit", str(tmp / "in.jsonl"), "-o", str(tmp / "pairs.jsonl"), "--sample",
                 "8", "--near-misses", "2", *common]) == 0
    return {"dir": tmp, "config": tmp / "config.yaml", "decisions": tmp / "dec.jsonl",
            "input": tmp / "in.jsonl", "pairs": tmp / "pairs.jsonl"}


@pytest.fixture(scope="module")
def server(run):
    with InspectServer([str(run["decisions"]), "--input", str(run["input"]), "--audit",
                        str(run["pairs"]), "--config", str(run["config"])]) as s:
        yield s


def _no_script_ran(driver) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    assert driver.execute_script("return window.pwned === undefined")
    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text  # noqa: B018


def _layout_holds(driver) -> None:
    assert driver.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth + 1")


def test_filter_the_verdicts_then_open_a_pair(browser, server) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    browser.get(server.url)
    Select(browser.find_element(By.ID, "verdict")).select_by_value("near")
    click_and_wait(browser, browser.find_element(By.ID, "filter"))
    assert "verdict=near" in browser.current_url
    cells = browser.find_elements(By.CSS_SELECTOR, "#verdicts tr.row td.verdict")
    assert cells and {c.text for c in cells} == {"near"}
    first_id = browser.find_element(By.CSS_SELECTOR, "#verdicts tr.row a.open").text
    click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "#verdicts tr.row a.open"))
    assert browser.find_element(By.ID, "verdict").text == "near"
    assert first_id in browser.find_element(By.TAG_NAME, "h1").text
    assert browser.find_element(By.ID, "earlier").text and browser.find_element(By.ID, "later").text
    rows = browser.find_elements(By.CSS_SELECTOR, "#pair tr")
    assert len(rows) >= 2  # the header and at least one aligned row
    kinds = [r.get_attribute("class") for r in rows[1:] if r.get_attribute("class")]
    assert all(k.startswith("k-") for k in kinds)
    left = "".join(r.find_elements(By.TAG_NAME, "td")[0].text for r in rows[1:])
    assert left  # the earlier normalized text, rebuilt from its rows


def test_filter_by_reason(browser, server) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    browser.get(server.url)
    reason = Select(browser.find_element(By.ID, "reason"))
    values = [o.get_attribute("value") for o in reason.options]
    assert "near" in values and not any(ch.isdigit() for v in values for ch in v)
    reason.select_by_value("near")  # a stage word: every near reason, whatever its figures
    click_and_wait(browser, browser.find_element(By.ID, "filter"))
    shown = {c.text for c in browser.find_elements(By.CSS_SELECTOR, "#verdicts td.reason")}
    assert len(shown) > 1 and all(r.startswith("near: ") for r in shown)
    chosen = next(v for v in values if v.startswith("exact: "))
    Select(browser.find_element(By.ID, "reason")).select_by_value(chosen)
    click_and_wait(browser, browser.find_element(By.ID, "filter"))
    shown = {c.text for c in browser.find_elements(By.CSS_SELECTOR, "#verdicts td.reason")}
    assert shown == {chosen}


def test_the_check_form(browser, server) -> None:
    from selenium.webdriver.common.by import By

    browser.get(server.url + "/check")
    browser.find_element(By.ID, "first").send_keys("深市今天上涨了百分之三")
    browser.find_element(By.ID, "second").send_keys("深市昨天上涨了百分之三")
    click_and_wait(browser, browser.find_element(By.ID, "run-check"))
    assert browser.find_element(By.ID, "check-verdict").text == "unique"
    assert "related: date" in browser.find_element(By.ID, "check-reason").text
    date_rows = browser.find_elements(By.CSS_SELECTOR, "#pair tr.k-date")
    assert [r.find_elements(By.TAG_NAME, "td")[0].text for r in date_rows] == ["今"]


def test_label_an_audit_pair_with_a_key(browser, server, run) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    before = [json.loads(line) for line in run["pairs"].read_text().splitlines()]
    browser.get(server.url + "/audit?i=1")
    browser.find_element(By.TAG_NAME, "body").send_keys("d")
    WebDriverWait(browser, 10).until(lambda d: not d.current_url.endswith("i=1"))
    after = [json.loads(line) for line in run["pairs"].read_text().splitlines()]
    assert after[1] == {**before[1], "label": "dup"}
    assert after[:1] + after[2:] == before[:1] + before[2:]
    assert browser.find_element(By.ID, "precision").text.startswith(
        "1.000 [" if before[1]["kind"] == "flagged" else "none judged yet")
    browser.get(server.url + "/audit?i=1")
    click_and_wait(browser, browser.find_element(By.ID, "label-related"))
    WebDriverWait(browser, 10).until(lambda d: not d.current_url.endswith("i=1"))
    assert json.loads(run["pairs"].read_text().splitlines()[1])["label"] == "related"


def test_hostile_texts_render_as_text(browser, server) -> None:
    from selenium.webdriver.common.by import By

    browser.get(server.url + "?verdict=unique")
    _no_script_ran(browser)
    _layout_holds(browser)
    page = browser.find_element(By.ID, "verdicts").text
    assert "<script>window.pwned = 1</script>" in page and "onerror=" in page
    assert "U+202E" in page
    hostile = len(_hostile_texts())
    for n in (hostile - 5, hostile - 4, hostile - 2, hostile - 1):
        browser.get(f"{server.url}/message?id=hostile-{n}")
        _no_script_ran(browser)
        _layout_holds(browser)
        assert browser.find_element(By.ID, "later").text
    assert "超长超长" in browser.find_element(By.ID, "later").text


def test_basic_auth_is_asked_for(browser, run, tmp_path) -> None:
    config = tmp_path / "auth.yaml"
    config.write_text("metrics:\n  basic_auth_user: judge\n"
                      "  basic_auth_password_env: INSPECTOR_TEST_PASSWORD\n")
    with InspectServer([str(run["decisions"]), "--config", str(config)],
                       env={"INSPECTOR_TEST_PASSWORD": "s3cret"}) as s:
        for path in ("", "/message?id=m1", "/check"):
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(s.url + path, timeout=10)
            assert refused.value.code == 401
        token = base64.b64encode(b"judge:s3cret").decode()
        browser.execute_cdp_cmd("Network.enable", {})
        browser.execute_cdp_cmd("Network.setExtraHTTPHeaders",
                                {"headers": {"Authorization": f"Basic {token}"}})
        try:
            browser.get(s.url)
            assert browser.find_elements("id", "verdicts")
        finally:
            browser.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {}})
        browser.get(s.url)
        assert not browser.find_elements("id", "verdicts")
