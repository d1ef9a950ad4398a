"""The inspector on the metrics port of a real `stream-dedup run` against a real broker, in a
headless Chromium: basic auth asked for, the recent verdicts filtered, a pair opened with the
candidates the engine tried."""

from __future__ import annotations

import base64
import urllib.error
import urllib.request
import uuid

import pytest
from conftest import service_unavailable
from kafka_helpers import (
    free_port,
    make_topics,
    produce,
    service_settings,
    start_service,
    stop_service,
    stream_lines,
    wait_drained,
)

from stream_dedup.tools.inspector_browser import browser_missing, click_and_wait, headless_chromium

PASSWORD_ENV = "INSPECTOR_SERVICE_TEST_PASSWORD"


def test_the_service_shows_its_verdicts(kafka_bootstrap, unique_topic, tmp_path) -> None:
    missing = browser_missing()
    if missing:
        service_unavailable(missing)
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    topics = make_topics(unique_topic, input_partitions=2)
    settings = service_settings(kafka_bootstrap, topics, f"inspect-{uuid.uuid4().hex[:8]}")
    _, lines = stream_lines(3000)
    produce(kafka_bootstrap, topics["input"], lines)
    port = free_port()
    log = tmp_path / "service.log"
    env = {"STREAM_DEDUP__METRICS__INSPECTOR": "true",
           "STREAM_DEDUP__METRICS__BASIC_AUTH_USER": "moderator",
           "STREAM_DEDUP__METRICS__BASIC_AUTH_PASSWORD_ENV": PASSWORD_ENV,
           PASSWORD_ENV: "pw-of-the-test"}
    proc = start_service(settings, tmp_path / "state", log, metrics_port=port, env=env)
    browser = None
    try:
        wait_drained(settings, 180, alive=lambda: proc.poll() is None)
        url = f"http://127.0.0.1:{port}/inspect"
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url, timeout=10)
        assert refused.value.code == 401
        browser = headless_chromium()
        token = base64.b64encode(b"moderator:pw-of-the-test").decode()
        browser.execute_cdp_cmd("Network.enable", {})
        browser.execute_cdp_cmd("Network.setExtraHTTPHeaders",
                                {"headers": {"Authorization": f"Basic {token}"}})
        browser.get(url)
        counts = browser.find_element(By.ID, "counts").text
        assert "3000 seen in all" in counts, counts
        Select(browser.find_element(By.ID, "verdict")).select_by_value("near")
        click_and_wait(browser, browser.find_element(By.ID, "filter"))
        cells = browser.find_elements(By.CSS_SELECTOR, "#verdicts tr.row td.verdict")
        assert cells and {c.text for c in cells} == {"near"}
        click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "#verdicts tr.row a.open"))
        assert browser.find_element(By.ID, "verdict").text == "near"
        candidates = browser.find_element(By.ID, "candidates")
        assert candidates.find_elements(By.TAG_NAME, "a"), candidates.text
        assert browser.find_elements(By.CSS_SELECTOR, "#pair tr")
    finally:
        if browser is not None:
            browser.quit()
        stop_service(proc, log)
