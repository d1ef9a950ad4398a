"""Drive the inspector in a real browser: `stream-dedup inspect` started as a process of its own,
and a headless Chromium (Debian's `chromium` and `chromium-driver`) through selenium.

Used by the browser tests (`tests/integration/test_inspector_browser.py`) and by
`bench/inspector_screenshots.py`, which takes the docs' screenshots the same way."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = ("chromium", "chromium-browser", "google-chrome")
DRIVER = "chromedriver"
_URL = re.compile(r"inspector: (\S+)")


def browser_missing() -> str | None:
    """Why a headless Chromium cannot be driven here, or None when it can."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    if not any(shutil.which(b) for b in CHROMIUM) or not shutil.which(DRIVER):
        return "no chromium and chromedriver on PATH (apt-get install chromium chromium-driver)"
    return None


def headless_chromium(width: int = 1280, height: int = 900) -> Any:
    """A selenium WebDriver on a headless Chromium of the given window size."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = next(shutil.which(b) for b in CHROMIUM if shutil.which(b))
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 f"--window-size={width},{height}", "--lang=en-US"):
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service(shutil.which(DRIVER)))


def click_and_wait(driver: Any, element: Any, timeout_s: float = 30.0) -> None:
    """Click `element` and wait until the next page has loaded (a form sent, a link
    followed): a click returns before it has. The page clicked on is marked in its window;
    a loaded page without the mark is the next one. Chromium may answer a call made while
    the document changes with an error of its own, not a stale element, so those are
    retried until the timeout."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    driver.execute_script("window.streamDedupPageLeft = true;")
    element.click()
    WebDriverWait(driver, timeout_s, ignored_exceptions=(WebDriverException,)).until(
        lambda d: d.execute_script(
            "return document.readyState === 'complete' && !window.streamDedupPageLeft;"))


class InspectServer:
    """`stream-dedup inspect ARGS --port 0` until the block ends; `url` is where it serves
    `/inspect` (read from its first line on stderr)."""

    def __init__(self, args: Sequence[str], env: dict[str, str] | None = None,
                 timeout_s: float = 60.0) -> None:
        self.args = list(args)
        self.env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}"
                    f"{os.environ.get('PYTHONPATH', '')}", **(env or {})}
        self.timeout_s = timeout_s
        self.url = ""
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> InspectServer:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "stream_dedup.cli", "inspect", *self.args, "--port", "0"],
            env=self.env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        deadline = time.monotonic() + self.timeout_s
        assert self._proc.stderr is not None
        while time.monotonic() < deadline:
            line = self._proc.stderr.readline()
            if not line and self._proc.poll() is not None:
                raise RuntimeError(f"stream-dedup inspect exited {self._proc.returncode}")
            found = _URL.search(line)
            if found:
                self.url = found.group(1).removesuffix("/audit")
                return self
        self.close()
        raise RuntimeError("stream-dedup inspect did not say where it serves")

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            self._proc.wait(10)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
