"""What the MLflow runs carry and what `bakeoff ui` links to and serves, without MLflow or a browser.
The UI itself, a real `mlflow server` and headless Chromium: tests/e2e/test_mlflow_ui_browser.py."""
import json
import re
import sqlite3
from urllib.parse import unquote

from bakeoff.pipelines.cli.ui import LEGS_VIEW_ID, compare_url, find_views, urls
from bakeoff_runtime.tracking.identity import mlflow_identity
from bakeoff_runtime.tracking.parent_run import LEGS_VIEW_TAG, leg_colours, summary_metrics
from bakeoff_runtime.tracking.saved_view import legs_view_state
from bakeoff_runtime.tracking.sink import SHARED_TAG, split_params


# --- what the runs carry (no MLflow, no browser) -----------------------------------------------
def test_a_jobs_run_carries_only_what_identifies_it_and_the_rest_in_one_tag():
    hps = {"leg": "trn1", "seed": 1, "lr": 0.003, "max_steps": 30, "per_device_batch_size": 8,
           "gradient_accumulation_steps": 2, "global_batch_size": 16}
    tags = {"bakeoff.backend": "neuron", "bakeoff.ran_on": "neuron on ml.trn1.2xlarge",
            "bakeoff.instance_type": "ml.trn1.2xlarge", "bakeoff.precision": "bf16"}
    params, shared = split_params(hps, tags)
    assert params == {"leg": "trn1", "backend": "neuron", "ran_on": "neuron on ml.trn1.2xlarge",
                      "instance_type": "ml.trn1.2xlarge", "precision": "bf16",
                      "seed": "1", "per_device_batch_size": "8", "gradient_accumulation_steps": "2"}
    assert json.loads(shared[SHARED_TAG]) == {"global_batch_size": 16, "lr": 0.003, "max_steps": 30}
    assert split_params({"leg": "a", "x": "y" * 9000}, {})[1] == {}  # over MLflow's tag limit: left out


def test_backend_means_the_legs_declared_backend_and_ran_on_where_the_job_ran():
    local_gpu_leg = {"leg": "p4d", "backend": "cpu", "instance_type": "ml.p4d.24xlarge", "emulated_on": "local cpu"}
    shown = mlflow_identity(local_gpu_leg, "cuda")
    assert (shown["backend"], shown["ran_on"]) == ("cuda", "cpu on local cpu")
    on_sagemaker = {"leg": "trn1", "backend": "neuron", "instance_type": "ml.trn1.2xlarge", "emulated_on": None}
    shown = mlflow_identity(on_sagemaker, None)  # no declared backend given: the one that ran is the declared one
    assert (shown["backend"], shown["ran_on"]) == ("neuron", "neuron on ml.trn1.2xlarge")
    assert local_gpu_leg["backend"] == "cpu"  # summary.json's record is left as it was


def test_the_saved_view_shows_the_columns_a_bakeoff_is_read_by_and_charts_that_tell_legs_apart():
    state = legs_view_state("val_loss")
    assert state["selectedColumns"] == ["attributes.`Dataset`", "params.`leg`", "params.`seed`", "params.`backend`",
                                        "params.`ran_on`", "metrics.`val_loss`", "metrics.`parity/val_loss_mean`",
                                        "tags.`bakeoff.verdict`"]
    charts = state["compareRunCharts"]
    sections = {s["uuid"] for s in state["compareRunSections"]}
    assert all(c["metricSectionId"] in sections for c in charts)
    lines = [c for c in charts if c["type"] == "LINE"]
    assert {c["metricKey"] for c in lines} == {"val_loss", "train_loss"}
    assert all(set(c["range"].values()) == {None} and c["ignoreOutliers"] for c in lines)  # y fits the data
    parity = [c for c in charts if "val_loss" in json.dumps(c) and c["type"] != "LINE"]
    assert parity and all(c["type"] == "SCATTER" for c in parity)  # no 0-based bar for the parity metric
    assert not state["useGroupedValuesInCharts"]  # every run drawn, in its own (the report's) colour


def test_every_legs_summary_has_the_same_metric_names_parity_first():
    trn = {"metric": {"mean": 2.5, "std": 0.1}, "throughput_mean": 900.0, "cost_per_run_usd_mean": 0.5,
           "compile_time_s_mean": 12.0, "completed": 2}
    gpu = {**trn, "compile_time_s_mean": None, "throughput_mean": float("nan")}
    a, b = summary_metrics("val_loss", trn), summary_metrics("val_loss", gpu)
    assert set(b) < set(a) and set(a) - set(b) == {"summary/compile_time_s", "summary/throughput"}  # never 0 or NaN
    assert sorted(a)[0] == "parity/val_loss_mean" and a["parity/val_loss_mean"] == 2.5
    colours = leg_colours(["p4d", "trn1", "g5"])
    assert len(set(colours.values())) == 3 and all(re.fullmatch(r"#[0-9a-fA-F]{6}", c) for c in colours.values())
    assert leg_colours(["p4d", "trn1"]) == {"p4d": colours["p4d"], "trn1": colours["trn1"]}  # by position in the spec


def test_the_ui_links_to_the_compare_views_of_the_latest_bakeoff(tmp_path):
    db = tmp_path / "mlflow.db"
    con = sqlite3.connect(db)
    con.executescript("""
        CREATE TABLE runs (run_uuid TEXT, name TEXT, experiment_id INTEGER, lifecycle_stage TEXT, start_time INTEGER);
        CREATE TABLE tags (key TEXT, value TEXT, run_uuid TEXT);
        CREATE TABLE params (key TEXT, value TEXT, run_uuid TEXT);
        CREATE TABLE experiment_tags (key TEXT, value TEXT, experiment_id INTEGER);""")
    runs = [("old", "tiny", 1, "active", 1), ("P", "tiny", 1, "active", 5),
            ("s-trn1", "trn1 (summary)", 1, "active", 6), ("s-p4d", "p4d (summary)", 1, "active", 6),
            ("c1", "trn1-s0", 1, "active", 6),
            ("c0", "p4d-s0", 1, "active", 6), ("gone", "p4d-s0", 1, "deleted", 6)]
    con.executemany("INSERT INTO runs VALUES (?,?,?,?,?)", runs)
    tags = [("bakeoff.role", "parent", "old"), ("bakeoff.role", "parent", "P"),
            ("bakeoff.role", "summary", "s-trn1"), ("bakeoff.leg", "trn1", "s-trn1"),
            ("bakeoff.role", "summary", "s-p4d"), ("bakeoff.leg", "p4d", "s-p4d")]
    tags += [("mlflow.parentRunId", "P", r) for r in ("s-trn1", "s-p4d", "c1", "c0", "gone")]
    con.executemany("INSERT INTO tags VALUES (?,?,?)", tags)
    con.execute("INSERT INTO params VALUES ('legs', 'p4d,trn1', 'P')")
    con.execute("INSERT INTO experiment_tags VALUES (?, '{}', 1)", (LEGS_VIEW_TAG,))
    con.commit()
    con.close()
    views = find_views(db)
    assert (views.parent_run_id, views.summary_run_ids, views.seed_run_ids) == ("P", ["s-p4d", "s-trn1"], ["c0", "c1"])
    links = urls("http://127.0.0.1:5000", views)
    assert unquote(links["legs"]) == 'http://127.0.0.1:5000/#/compare-runs?runs=["s-p4d","s-trn1"]&experiments=["1"]' \
                                     "&workflowType=machine_learning"
    # Every link opens MLflow's model-training view, never its GenAI one, whatever the browser last chose.
    assert all("workflowType=machine_learning" in link for link in links.values())
    assert links["experiment"] == "http://127.0.0.1:5000/#/experiments/1/runs?workflowType=machine_learning"
    assert links["table"] == "http://127.0.0.1:5000/#/experiments/1/runs?workflowType=machine_learning&" \
                             f"viewStateShareKey={LEGS_VIEW_ID}"
    assert links["charts"] == f"{links['table']}&compareRunsMode=CHART"
    assert f"mlflow.sharedViewState.{LEGS_VIEW_ID}" == LEGS_VIEW_TAG  # the evaluation writes what the UI links
    assert " " not in compare_url("http://h", "1", ["a"]) and '"' not in compare_url("http://h", "1", ["a"])


def test_the_ui_serves_this_machine_only_unless_asked_and_then_says_what_that_exposes():
    from bakeoff.pipelines.cli.main import build_parser
    from bakeoff.pipelines.cli.ui import exposure_note

    args = build_parser().parse_args(["ui", "run"])
    assert args.host == "127.0.0.1"
    assert exposure_note("127.0.0.1") is None and exposure_note("::1") is None and exposure_note("localhost") is None
    for host in ("0.0.0.0", "10.1.2.3", "my-host.example"):
        note = exposure_note(host)
        assert note.startswith(f"serving on {host}, beyond this machine") and "has the printed link" in note
        assert "it answers to " in note and "change" not in note  # read-only unless asked
    assert "change or delete" in exposure_note("0.0.0.0", writes=True)
    assert build_parser().parse_args(["ui", "run", "--host", "0.0.0.0"]).host == "0.0.0.0"


def test_a_moved_run_directory_is_served_from_a_copy_whose_artifact_locations_point_into_it(tmp_path):
    from bakeoff.pipelines.cli.ui_store import serving_copy

    old, new = tmp_path / "was" / "run", tmp_path / "now" / "run"
    db = new / "mlflow" / "mlflow.db"
    db.parent.mkdir(parents=True)
    con = sqlite3.connect(db)
    con.executescript("""
        CREATE TABLE experiments (experiment_id INTEGER, artifact_location TEXT);
        CREATE TABLE runs (run_uuid TEXT, experiment_id INTEGER, artifact_uri TEXT);""")
    con.execute("INSERT INTO experiments VALUES (1, ?)", ((old / "mlflow" / "artifacts").as_uri(),))
    con.execute("INSERT INTO experiments VALUES (2, ?)", ("s3://bucket/elsewhere",))
    con.executemany("INSERT INTO runs VALUES (?,?,?)", [
        ("r1", 1, (old / "mlflow" / "artifacts" / "r1" / "artifacts").as_uri()),
        ("private", 1, (tmp_path / "private").as_uri()),  # not under the experiment's: left for the guard
        ("s3", 2, "s3://bucket/elsewhere/s3/artifacts")])
    con.commit()
    con.close()
    before = db.read_bytes()
    (tmp_path / "private-copy").mkdir()
    served = serving_copy(db, new, tmp_path / "private-copy")
    assert db.read_bytes() == before and sorted(p.name for p in db.parent.iterdir()) == ["mlflow.db"]
    con = sqlite3.connect(served)
    uris = dict(con.execute("SELECT run_uuid, artifact_uri FROM runs"))
    assert uris == {"r1": (new.resolve() / "mlflow" / "artifacts" / "r1" / "artifacts").as_uri(),
                    "private": (tmp_path / "private").as_uri(), "s3": "s3://bucket/elsewhere/s3/artifacts"}
    assert dict(con.execute("SELECT * FROM experiments"))[1] == (new.resolve() / "mlflow" / "artifacts").as_uri()
    con.close()
