"""The report page in a browser (headless Chromium) at phone and laptop widths."""
import shutil

import pytest
from report_inputs import VALUES

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


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (`make test` installs it)")
def test_hovering_a_curve_reaches_the_step_and_its_seed_values(evaluation, tmp_path):
    """Bands and lines let the pointer through (pointer-events none) to the step under it, whose
    title the browser shows: each leg's mean and every seed's value there."""
    from playwright.sync_api import sync_playwright

    path = write_reports(evaluation, tmp_path)[0]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(path.as_uri())
            figure = page.locator("figure").filter(has_text="Validation val_loss")
            column = figure.locator('rect[data-step="100"]')
            column.scroll_into_view_if_needed()
            box = column.bounding_box()
            # the middle of the last step's column, where every leg's lines and band lie
            x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
            under = page.evaluate("([x, y]) => { const el = document.elementFromPoint(x, y); "
                                  "const hit = el.closest('[data-step], [data-marker]'); "
                                  "return hit ? hit.querySelector('title').textContent : el.tagName; }", [x, y])
            assert under.startswith(("step 100", "trn at step 100", "gpu at step 100")), under
            assert any(", ".join(f"seed {i}: {v:.4g}" for i, v in enumerate(values)) in under
                       for values in VALUES.values()), under
            # no request leaves the page: it is self-contained
            requests: list[str] = []
            page.on("request", lambda r: requests.append(r.url))
            page.reload()
            assert [u for u in requests if not u.startswith("file://")] == []
        finally:
            browser.close()
