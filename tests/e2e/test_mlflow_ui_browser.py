"""The MLflow UI as a person sees it: a real `mlflow server` on 127.0.0.1, a tiny bake-off
logged to it, and headless Chromium (Playwright) finding the parent run, its nested
children, the report artifact, the decision image, a child's log and datasets; then `bakeoff ui` on the
suite's local run: MLflow's model-training view with the columns a bake-off is read by, its compare
views showing what identifies each seed's run and the legs' summary runs side by side, and the report
of a run directory that was moved. Screenshots land in test-artifacts/."""
import json
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from shared_runs import shared_tiny_run  # noqa: F401  (the fixture `tiny_run`: one real run per invocation)

from bakeoff_runtime.tracking.sink import CHILD_PARAMS
from conftest import ROOT, bakeoff, tiny_spec, write_spec

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

ARTIFACTS = ROOT / "test-artifacts"

needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (`make test` installs it)")

# MLflow 3.17's UI opens an experiment in its GenAI mode unless the link asks for model training
# (pipelines/cli/ui.py TRAINING_VIEW).
TRAINING = "workflowType=machine_learning"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


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
    # A production run to decide: the parent run then carries the decision figure.
    data["decision"] = {"production": {"tokens": 2.0e8}, "runs_per_period": 4, "period": "quarter",
                        "porting": {"hours_spent": 10, "hours_expected": 10, "usd_per_hour": 100}}
    proc = bakeoff("run", write_spec(root / "ui.yaml", data), "--out", root / "out")
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    ev = json.loads((root / "out" / "evaluation" / "evaluation.json").read_text())
    assert ev["mlflow"].get("parent_run_id"), ev["mlflow"]
    return server, ev


# slow: an MLflow server and a browser. One test reads what `logged` logged: a module-scoped fixture runs once
# per xdist worker, and two tests of it sent to two workers (`--dist worksteal`) ran the bake-off twice.
def test_children_have_loss_curves_and_parent_children_and_report_are_visible_in_the_ui(logged):
    from mlflow.tracking import MlflowClient

    url, ev = logged
    client = MlflowClient(url)
    # The children have loss curves to compare, each under the parent (without a browser too).
    for leg in ev["legs"].values():
        for run in leg["runs"]:
            history = client.get_metric_history(run["mlflow_run_id"], "train_loss")
            assert len(history) >= 4
            assert client.get_run(run["mlflow_run_id"]).data.tags["mlflow.parentRunId"] == ev["mlflow"]["parent_run_id"]
    # Every seed's run names the same data, by content: both legs visibly saw the same.
    inputs = [client.get_run(run["mlflow_run_id"]).inputs.dataset_inputs
              for leg in ev["legs"].values() for run in leg["runs"]]
    digests = {tuple(sorted((i.dataset.name, i.dataset.digest) for i in found)) for found in inputs}
    assert len(digests) == 1 and {name for name, _ in next(iter(digests))} == {"train", "validation"}, digests
    digest = dict(next(iter(digests)))["train"]
    # Each child's job log, as MLflow shows it, is the job's own: with the SageMaker SDK installed (as here),
    # sagemaker-mlflow's header provider warned on every request to this (non-ARN) server; bakeoff's clients drop
    # that one warning (bakeoff_runtime/tracking/plugins.py).
    for leg in ev["legs"].values():
        for run in leg["runs"]:
            log = Path(client.download_artifacts(run["mlflow_run_id"], "job/job.log")).read_text()
            assert "time_to_first_step_s=" in log and "resolving request headers" not in log, log[:3000]
    if CHROMIUM is None:
        pytest.skip("needs Debian's chromium (`make test` installs it): the loss curves were checked, not the UI")
    from playwright.sync_api import sync_playwright

    exp = client.get_experiment_by_name("bakeoff-ui")
    parent = ev["mlflow"]["parent_run_id"]
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{url}/#/experiments/{exp.experiment_id}/runs?{TRAINING}")
            page.get_by_text("ui", exact=True).wait_for(timeout=60_000)  # the parent, named after the bake-off
            row = page.locator("[role=row]", has_text="ui")
            assert row.count() == 1  # children are nested under it, not listed beside it
            row.first.locator("button").first.click()  # expand the parent
            for child in ("g5-s0", "g5-s1", "m5-s0", "m5-s1"):
                page.get_by_text(child, exact=True).wait_for(timeout=30_000)
            page.screenshot(path=str(ARTIFACTS / "mlflow-ui-runs.png"))
            page.goto(f"{url}/#/experiments/{exp.experiment_id}/runs/{parent}/artifacts?{TRAINING}")
            page.get_by_text("report.html", exact=True).first.wait_for(timeout=30_000)
            for name in ("report.md", "evaluation.json"):
                assert page.get_by_text(name, exact=True).count() >= 1, name
            page.get_by_text("report.html", exact=True).first.click()
            # MLflow previews an HTML artifact in a sandboxed iframe.
            page.frame_locator("iframe").first.get_by_text("Bake-off ui:").first.wait_for(timeout=30_000)
            page.screenshot(path=str(ARTIFACTS / "mlflow-ui-report.png"))

            # The decision, as an image MLflow previews.
            page.get_by_text("decision.svg", exact=True).first.click()
            image = page.locator("img[src^='blob:']").first  # MLflow shows an image artifact from a blob URL
            image.wait_for(timeout=30_000)
            page.wait_for_function("e => e.complete && e.naturalWidth > 0", arg=image.element_handle(),
                                   timeout=30_000)  # decoded: a drawn SVG, not a broken image
            _close_assistant(page)
            page.screenshot(path=str(ARTIFACTS / "mlflow-parent-decision.png"))
            assert "bakeoff_legs.json" in page.inner_text("body")  # the legs as an MLflow table

            # A seed's own run: the data it trained on, and its log among its files.
            child = ev["legs"]["g5"]["runs"][0]["mlflow_run_id"]
            page.goto(f"{url}/#/experiments/{exp.experiment_id}/runs/{child}?{TRAINING}")
            page.get_by_text(digest).first.wait_for(timeout=60_000)
            page.goto(f"{url}/#/experiments/{exp.experiment_id}/runs/{child}/artifacts?{TRAINING}")
            page.get_by_text("job", exact=True).first.click()
            page.get_by_text("job.log", exact=True).first.click()
            page.get_by_text("time_to_first_step_s=").first.wait_for(timeout=30_000)
            _close_assistant(page)
            page.screenshot(path=str(ARTIFACTS / "mlflow-child-run.png"))
        finally:
            browser.close()
    assert (ARTIFACTS / "mlflow-ui-runs.png").stat().st_size > 10_000


# --- `bakeoff ui` on the suite's local run -------------------------------------------------------
@pytest.fixture(scope="module")
def ui(tiny_run):
    from bakeoff.pipelines.cli.ui import launch, stop

    assert tiny_run["proc"].returncode in (0, 1, 3), tiny_run["proc"].stderr[-2000:]
    proc, links = launch(tiny_run["out"], _port())
    ev = json.loads((tiny_run["out"] / "evaluation" / "evaluation.json").read_text())
    names = {run_id: f"{leg} (summary)" for leg, run_id in ev["mlflow"]["summary_runs"].items()}
    names.update({run["mlflow_run_id"]: run["job"] for fig in ev["legs"].values() for run in fig["runs"]})
    yield links, names
    stop(proc)


def test_local_runs_carry_legs_summaries_colours_and_the_real_duration(tiny_run):
    from mlflow.tracking import MlflowClient

    out = tiny_run["out"]
    ev = json.loads((out / "evaluation" / "evaluation.json").read_text())
    client = MlflowClient(tracking_uri=f"sqlite:///{out / 'mlflow' / 'mlflow.db'}")
    runs = client.search_runs([ev["mlflow"]["experiment_id"]])
    parent = next(r for r in runs if r.info.run_id == ev["mlflow"]["parent_run_id"])
    kids = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    seeds = [r for r in kids if r.data.tags.get("bakeoff.role") != "summary"]
    summaries = {r.data.tags["bakeoff.leg"]: r for r in kids if r.data.tags.get("bakeoff.role") == "summary"}
    assert sorted(r.info.run_name for r in summaries.values()) == ["p4d (summary)", "trn1 (summary)"]
    assert ev["mlflow"]["summary_runs"] == {leg: r.info.run_id for leg, r in summaries.items()}
    for run in seeds:  # what identifies a seed's run, and nothing every run shares
        assert set(run.data.params) <= set(CHILD_PARAMS)
        assert {"leg", "backend", "instance_type", "precision", "seed"} <= set(run.data.params)
        assert run.data.tags["mlflow.runColor"] == summaries[run.data.params["leg"]].data.tags["mlflow.runColor"]
    assert {r.data.params["instance_type"] for r in seeds} == {"ml.trn1.2xlarge", "ml.p4d.24xlarge"}
    assert parent.data.params["lr"] and parent.data.params["parity.metric"] == "val_loss"  # shared ones: on the parent
    # MLflow's own system metrics (sampled every 5 s: the xla:cpu leg's jobs last long enough to have some).
    assert any(k.startswith("system/cpu_utilization") for r in seeds for k in r.data.metrics), \
        [sorted(r.data.metrics) for r in seeds]
    assert summaries["trn1"].data.tags["mlflow.runColor"] != summaries["p4d"].data.tags["mlflow.runColor"]
    names = [set(r.data.metrics) - {"summary/compile_time_s"} for r in summaries.values()]
    assert names[0] == names[1] and "parity/val_loss_mean" in names[0]
    assert summaries["trn1"].data.metrics["parity/val_loss_mean"] == pytest.approx(ev["legs"]["trn1"]["metric"]["mean"])
    assert not [k for k in parent.data.metrics if k.startswith(("trn1.", "p4d."))]  # no single-bar charts
    # The parent spans the bake-off: from its first job's start, not the evaluation's few hundred ms.
    assert parent.info.start_time == min(r.info.start_time for r in seeds)
    assert parent.info.end_time >= max(r.info.end_time for r in seeds)


def _show_tables(page) -> None:
    """Scroll MLflow's compare page so the run, parameter and metric tables fill the screenshot."""
    page.get_by_text("Run details", exact=True).first.evaluate("e => e.scrollIntoView({block: 'start'})")
    time.sleep(0.5)


def _close_assistant(page) -> None:
    """MLflow 3 opens an assistant panel beside every page; close it so the screenshot shows the runs."""
    close = page.get_by_role("button", name=re.compile("close", re.I))
    if close.count():
        close.first.click()


@needs_chromium
def test_bakeoff_ui_compare_views_show_identities_and_legs_side_by_side(ui):
    from playwright.sync_api import sync_playwright

    links, run_names = ui
    assert set(links) == {"table", "charts", "experiment", "legs", "seeds"}
    ARTIFACTS.mkdir(exist_ok=True)

    def table_row(text: str, name: str) -> list[str]:
        """A row of the compare view's tables, as the page renders it: name, then one cell per run."""
        rows = [line.split("\t") for line in text.splitlines() if "\t" in line and line.split("\t")[0].strip() == name]
        assert rows, f"no row {name!r} in the compare view"
        return [cell.strip() for cell in rows[0][1:]]

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1400})
            page.goto(links["legs"])
            page.get_by_text("trn1 (summary)").first.wait_for(timeout=60_000)
            page.get_by_text("p4d (summary)").first.wait_for(timeout=30_000)
            page.get_by_text("Parameters", exact=True).first.wait_for(timeout=30_000)
            _close_assistant(page)
            text = page.inner_text("body")
            names = [run_names[run_id] for run_id in table_row(text, "Run ID:")]
            assert sorted(names) == ["p4d (summary)", "trn1 (summary)"]  # the legs, one column each
            assert sorted(table_row(text, "instance_type")) == ["ml.p4d.24xlarge", "ml.trn1.2xlarge"]
            assert sorted(table_row(text, "leg")) == ["p4d", "trn1"]
            # The parity metric is the one the parallel-coordinates plot starts with, and the first metric row.
            metric_rows = text.split("Metrics\n", 1)[1].split("Artifacts", 1)[0]
            assert metric_rows.split("Show diff only\n", 1)[-1].splitlines()[0] == "parity/val_loss_mean"
            assert "parity/val_loss_mean" in text.split("Metrics:", 1)[1].split("Clear All", 1)[0]
            page.screenshot(path=str(ARTIFACTS / "mlflow_compare.png"))
            _show_tables(page)
            page.screenshot(path=str(ARTIFACTS / "mlflow_compare_tables.png"))

            page.close()  # a fresh page: the two views differ only after `#`, which is no navigation
            page = browser.new_page(viewport={"width": 1600, "height": 1400})
            page.goto(links["seeds"])
            page.get_by_text("trn1-s0").first.wait_for(timeout=60_000)
            page.get_by_text("Parameters", exact=True).first.wait_for(timeout=30_000)
            _close_assistant(page)
            text = page.inner_text("body")
            runs = [run_names[run_id] for run_id in table_row(text, "Run ID:")]
            assert sorted(runs) == ["p4d-s0", "p4d-s1", "trn1-s0", "trn1-s1"]
            cells = {name: table_row(text, name) for name in ("leg", "backend", "instance_type", "precision", "seed")}
            for name, values in cells.items():
                assert len(values) == 4, (name, values)
            by_run = {run: {name: values[i] for name, values in cells.items()} for i, run in enumerate(runs)}
            assert by_run["trn1-s1"]["leg"] == "trn1" and by_run["trn1-s1"]["seed"] == "1"
            assert by_run["p4d-s0"]["instance_type"] == "ml.p4d.24xlarge"
            assert by_run["trn1-s0"]["instance_type"] == "ml.trn1.2xlarge"
            params = text.split("Parameters\n", 1)[1].split("Metrics\n", 1)[0]
            assert not re.search(r"^(lr|warmup_steps|weight_decay)\t", params, re.M)  # shared: on the parent
            _show_tables(page)
            page.screenshot(path=str(ARTIFACTS / "mlflow_compare_seeds.png"))

            # The runs page's charts through the saved view: grouped by leg, parity first.
            page.close()
            page = browser.new_page(viewport={"width": 1600, "height": 1400})
            page.goto(links["charts"])
            page.get_by_text("Group: trn1").first.wait_for(timeout=60_000)
            page.get_by_text("Group: p4d").first.wait_for(timeout=30_000)
            page.get_by_text("parity/val_loss_mean").first.wait_for(timeout=30_000)
            _close_assistant(page)
            text = page.inner_text("body")
            assert "Group by: bakeoff.leg" in text
            sections = [line for line in text.splitlines() if line in ("Parity: val_loss", "Curves", "Speed and cost")]
            assert sections == ["Parity: val_loss", "Curves", "Speed and cost"], sections  # the parity metric first
            page.screenshot(path=str(ARTIFACTS / "mlflow_charts_by_leg.png"))
        finally:
            browser.close()
    assert (ARTIFACTS / "mlflow_compare.png").stat().st_size > 10_000


def _header_cells(page) -> list[str]:
    return [t.strip() for t in page.locator("[role=columnheader]").all_inner_texts() if t.strip()]


@needs_chromium
def test_bakeoff_ui_opens_the_training_view_with_the_columns_a_bakeoff_is_read_by(ui, tiny_run):
    from playwright.sync_api import sync_playwright

    links, run_names = ui
    ev = json.loads((tiny_run["out"] / "evaluation" / "evaluation.json").read_text())
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 2600, "height": 1000})
            page.goto(links["table"])
            page.get_by_text("Group: trn1").first.wait_for(timeout=60_000)
            page.get_by_text("trn1-s0", exact=True).first.wait_for(timeout=30_000)
            _close_assistant(page)
            time.sleep(1)
            text = page.inner_text("body")
            # MLflow's model-training view: its runs page, not the GenAI one's "Training runs" beside traces.
            assert "Model training" in text and "Training runs" not in text and "Prompts" not in text, text[:800]
            headers = _header_cells(page)
            for column in ("Dataset", "leg", "seed", "backend", "ran_on", "val_loss", "parity/val_loss_mean",
                           "bakeoff.verdict"):
                assert column in headers, (column, headers)
            assert "train (" in text and "validation (" in text  # each seed's datasets, by digest
            assert ev["verdict"] in text
            page.screenshot(path=str(ARTIFACTS / "mlflow-training-view.png"))

            # A seed's run: its log and metrics.jsonl among its files, the log readable in the page.
            child = ev["legs"]["trn1"]["runs"][0]["mlflow_run_id"]
            base, _, _ = links["experiment"].partition("#")
            page.goto(f"{base}#/experiments/{ev['mlflow']['experiment_id']}/runs/{child}/artifacts?{TRAINING}")
            page.get_by_text("summary.json", exact=True).first.wait_for(timeout=60_000)
            page.get_by_text("job", exact=True).first.click()
            page.get_by_text("metrics.jsonl", exact=True).first.wait_for(timeout=30_000)
            page.get_by_text("job.log", exact=True).first.click()
            page.get_by_text("time_to_first_step_s=").first.wait_for(timeout=30_000)
            _close_assistant(page)
            page.screenshot(path=str(ARTIFACTS / "mlflow-child-run-log.png"))
        finally:
            browser.close()


@needs_chromium
def test_a_moved_run_directory_shows_its_report_in_bakeoff_ui(tiny_run, tmp_path):
    from playwright.sync_api import sync_playwright

    from bakeoff.pipelines.cli.ui import launch, stop

    copied = tmp_path / "copy"
    shutil.copytree(tiny_run["out"], copied, symlinks=True)
    moved = tmp_path / "moved" / "run"
    moved.parent.mkdir()
    copied.rename(moved)
    ev = json.loads((moved / "evaluation" / "evaluation.json").read_text())
    proc, links = launch(moved, _port())
    try:
        base, _, _ = links["experiment"].partition("#")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1600, "height": 1000})
                page.goto(f"{base}#/experiments/{ev['mlflow']['experiment_id']}/runs/"
                          f"{ev['mlflow']['parent_run_id']}/artifacts?{TRAINING}")
                page.get_by_text("report.html", exact=True).first.click(timeout=60_000)
                page.frame_locator("iframe").first.get_by_text("Bake-off tiny:").first.wait_for(timeout=30_000)
                _close_assistant(page)
                page.screenshot(path=str(ARTIFACTS / "mlflow-moved-run-report.png"))
            finally:
                browser.close()
    finally:
        stop(proc)
