"""The MLflow UI as a person sees it: a real `mlflow server` on 127.0.0.1, a tiny bake-off
logged to it, and headless Chromium (Playwright) finding the parent run, its nested
children and the report artifact. Screenshots land in test-artifacts/."""
import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT, bakeoff, tiny_spec, write_spec

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = ROOT / "test-artifacts"
pytestmark = [pytest.mark.slow,  # an MLflow server and a browser
              pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (`make test` installs it)")]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("mlflow-server")
    port = _port()
    exe = str(Path(sys.executable).with_name("mlflow"))
    log = open(root / "server.log", "w")  # noqa: SIM115  (the server's log for the module's lifetime)
    proc = subprocess.Popen([exe, "server", "--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}",
                             "--artifacts-destination", str(root / "artifacts"), "--host", "127.0.0.1",
                             "--port", str(port), "--workers", "1"], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if urllib.request.urlopen(f"{url}/health", timeout=2).read().strip() == b"OK":
                break
        except OSError:
            time.sleep(1)
    else:
        proc.kill()
        pytest.fail(f"mlflow server did not answer /health: {(root / 'server.log').read_text()[-2000:]}")
    yield url
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def logged(server, tmp_path_factory):
    root = tmp_path_factory.mktemp("ui-run")
    data = tiny_spec(name="ui", mlflow={"tracking_uri": server})
    data["training"]["max_steps"] = 20
    data["legs"] = [{"name": "g5", "instance_type": "ml.g5.xlarge", "precision": "fp32"},
                    {"name": "m5", "instance_type": "ml.m5.xlarge", "precision": "fp32"}]
    data["parity"]["baseline"] = "m5"
    proc = bakeoff("run", write_spec(root / "ui.yaml", data), "--out", root / "out")
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    ev = json.loads((root / "out" / "evaluation" / "evaluation.json").read_text())
    assert ev["mlflow"].get("parent_run_id"), ev["mlflow"]
    return server, ev


def test_parent_children_and_report_are_visible_in_the_ui(logged):
    from mlflow.tracking import MlflowClient
    from playwright.sync_api import sync_playwright

    url, ev = logged
    exp = MlflowClient(url).get_experiment_by_name("bakeoff-ui")
    parent = ev["mlflow"]["parent_run_id"]
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{url}/#/experiments/{exp.experiment_id}/runs")
            page.get_by_text("ui", exact=True).wait_for(timeout=60_000)  # the parent, named after the bake-off
            row = page.locator("[role=row]", has_text="ui")
            assert row.count() == 1  # children are nested under it, not listed beside it
            row.first.locator("button").first.click()  # expand the parent
            for child in ("g5-s0", "g5-s1", "m5-s0", "m5-s1"):
                page.get_by_text(child, exact=True).wait_for(timeout=30_000)
            page.screenshot(path=str(ARTIFACTS / "mlflow-ui-runs.png"))
            page.goto(f"{url}/#/experiments/{exp.experiment_id}/runs/{parent}/artifacts")
            page.get_by_text("report.html", exact=True).first.wait_for(timeout=30_000)
            for name in ("report.md", "evaluation.json"):
                assert page.get_by_text(name, exact=True).count() >= 1, name
            page.get_by_text("report.html", exact=True).first.click()
            # MLflow previews an HTML artifact in a sandboxed iframe.
            page.frame_locator("iframe").first.get_by_text("Bake-off ui:").first.wait_for(timeout=30_000)
            page.screenshot(path=str(ARTIFACTS / "mlflow-ui-report.png"))
        finally:
            browser.close()
    assert (ARTIFACTS / "mlflow-ui-runs.png").stat().st_size > 10_000


def test_children_have_loss_curves_to_compare(logged):
    from mlflow.tracking import MlflowClient

    url, ev = logged
    client = MlflowClient(url)
    for leg in ev["legs"].values():
        for run in leg["runs"]:
            history = client.get_metric_history(run["mlflow_run_id"], "train_loss")
            assert len(history) >= 4
            assert client.get_run(run["mlflow_run_id"]).data.tags["mlflow.parentRunId"] == ev["mlflow"]["parent_run_id"]
