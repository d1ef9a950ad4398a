"""The screenshots of the inspector in the docs (docs/inspector.md), taken in a headless Chromium
against a real file run of the shipped sample stream.

    python bench/inspector_screenshots.py [--out docs/images] [--messages 3000]

Runs `stream-dedup dedup` and `stream-dedup audit` over the first `--messages` messages of the
sample stream in a temporary folder, serves them with `stream-dedup inspect`, and saves the
recent verdicts, a related pair side by side, the check form and the audit page as PNG files.
Needs chromium, chromium-driver and selenium (deploy/test.sh installs them), and a CJK font
(Debian's fonts-wqy-zenhei or fonts-noto-cjk) for the texts to show.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import tempfile
from pathlib import Path

from stream_dedup.cli.main import main as cli
from stream_dedup.cli.parser import SAMPLE
from stream_dedup.tools.inspector_browser import (
    InspectServer,
    browser_missing,
    click_and_wait,
    headless_chromium,
)

SHOTS = ("inspector-verdicts", "inspector-pair", "inspector-check", "inspector-audit")
# The check form's example: a lead-in (material), a date changed, a number written another way.
CHECK = ("深市今天上涨了百分之三，成交额四千亿元", "据报道，深市昨天上涨了百分之三，成交额4000亿元")


def _run(folder: Path, messages: int) -> list[str]:
    """The run's files: decisions, input and audit pairs (as `inspect` arguments)."""
    with gzip.open(SAMPLE, "rt", encoding="utf-8") as f:
        lines = [line for _, line in zip(range(messages), f, strict=False)]
    source = folder / "sample.jsonl"
    source.write_text("".join(lines), encoding="utf-8")
    cli(["dedup", str(source), "-o", str(folder / "unique.jsonl"), "--decisions",
         str(folder / "decisions.jsonl"), "--quiet"])
    cli(["audit", str(source), "-o", str(folder / "pairs.jsonl"), "--sample", "40"])
    return [str(folder / "decisions.jsonl"), "--input", str(source), "--audit",
            str(folder / "pairs.jsonl")]


def take(out: Path, messages: int) -> list[Path]:
    """Save the screenshots into `out`; returns their paths."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.expected_conditions import staleness_of
    from selenium.webdriver.support.ui import WebDriverWait

    saved = []
    with tempfile.TemporaryDirectory(prefix="inspector-shots-") as tmp, \
            InspectServer(_run(Path(tmp), messages)) as server:
        browser = headless_chromium(1280, 900)
        try:
            browser.get(server.url)
            saved.append(out / f"{SHOTS[0]}.png")
            browser.save_screenshot(str(saved[-1]))
            browser.get(server.url + "?verdict=related")
            first = browser.find_element(By.CSS_SELECTOR, "#verdicts tr.row a.open")
            click_and_wait(browser, first)
            browser.execute_script("document.getElementById('pair').scrollIntoView()")
            saved.append(out / f"{SHOTS[1]}.png")
            browser.save_screenshot(str(saved[-1]))
            browser.get(server.url + "/check")
            browser.find_element(By.ID, "first").send_keys(CHECK[0])
            browser.find_element(By.ID, "second").send_keys(CHECK[1])
            click_and_wait(browser, browser.find_element(By.ID, "run-check"))
            saved.append(out / f"{SHOTS[2]}.png")
            browser.save_screenshot(str(saved[-1]))
            for _ in range(3):  # three pairs judged: the running precision shows
                browser.get(server.url + "/audit")
                body = browser.find_element(By.TAG_NAME, "body")
                body.send_keys("d")
                WebDriverWait(browser, 10).until(staleness_of(body))
            browser.get(server.url + "/audit")
            saved.append(out / f"{SHOTS[3]}.png")
            browser.save_screenshot(str(saved[-1]))
        finally:
            browser.quit()
    return saved


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("docs/images"), help="folder of the PNGs")
    p.add_argument("--messages", type=int, default=3000, help="sample messages to run")
    return p.parse_args(argv)


if __name__ == "__main__":
    args = parse_args(None)
    missing = browser_missing()
    if missing:
        sys.exit(f"inspector_screenshots: {missing}")
    args.out.mkdir(parents=True, exist_ok=True)
    for path in take(args.out, args.messages):
        print(path)
