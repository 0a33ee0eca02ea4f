"""The report page in a browser (headless Chromium) at phone and laptop widths."""
import shutil

import pytest

from bakeoff_runtime.report.document import write_reports
from conftest import ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


# slow: a browser
@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (`make test` installs it)")
def test_the_page_at_phone_and_laptop_widths(evaluation, tmp_path):
    from playwright.sync_api import sync_playwright

    path = write_reports(evaluation, tmp_path)[0]
    artifacts = ROOT / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        args = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=args)
        try:
            for width in (390, 1280):
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.goto(path.as_uri())
                # nothing but a table's own scroller is wider than the screen
                assert page.evaluate("document.documentElement.scrollWidth") <= width
                box = page.locator("main.page").bounding_box()
                assert abs(box["x"] - (width - box["x"] - box["width"])) <= 1  # centred
                tick = page.locator("svg.chart text[data-axis]").first.bounding_box()
                assert tick["height"] >= 8  # tick labels stay legible when a figure shrinks to the screen
                page.screenshot(path=str(artifacts / f"report_fixture_{width}.png"), full_page=True)
                page.close()
        finally:
            browser.close()
