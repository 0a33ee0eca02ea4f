"""What the MLflow runs carry and what `bakeoff ui` links to and serves, without MLflow or a browser.
The UI itself, a real `mlflow server` and headless Chromium: tests/e2e/test_mlflow_ui_browser.py."""
import json
import re
import sqlite3
from urllib.parse import unquote

from bakeoff_runtime.tracking.parent_run import LEGS_VIEW_TAG, leg_colours, summary_metrics
from bakeoff_runtime.tracking.sink import SHARED_TAG, split_params
from pipelines.cli.ui import LEGS_VIEW_ID, compare_url, find_views, urls


# --- what the runs carry (no MLflow, no browser) -----------------------------------------------
def test_a_jobs_run_carries_only_what_identifies_it_and_the_rest_in_one_tag():
    hps = {"leg": "trn1", "seed": 1, "lr": 0.003, "max_steps": 30, "per_device_batch_size": 8,
           "gradient_accumulation_steps": 2, "global_batch_size": 16}
    tags = {"bakeoff.backend": "neuron", "bakeoff.instance_type": "ml.trn1.2xlarge", "bakeoff.precision": "bf16"}
    params, shared = split_params(hps, tags)
    assert params == {"leg": "trn1", "backend": "neuron", "instance_type": "ml.trn1.2xlarge", "precision": "bf16",
                      "seed": "1", "per_device_batch_size": "8", "gradient_accumulation_steps": "2"}
    assert json.loads(shared[SHARED_TAG]) == {"global_batch_size": 16, "lr": 0.003, "max_steps": 30}
    assert split_params({"leg": "a", "x": "y" * 9000}, {})[1] == {}  # over MLflow's tag limit: left out


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
    assert unquote(links["legs"]) == 'http://127.0.0.1:5000/#/compare-runs?runs=["s-p4d","s-trn1"]&experiments=["1"]'
    assert links["experiment"] == "http://127.0.0.1:5000/#/experiments/1/runs"
    assert links["charts"] == f"http://127.0.0.1:5000/#/experiments/1/runs?viewStateShareKey={LEGS_VIEW_ID}&" \
                              "compareRunsMode=CHART"
    assert f"mlflow.sharedViewState.{LEGS_VIEW_ID}" == LEGS_VIEW_TAG  # the evaluation writes what the UI links
    assert " " not in compare_url("http://h", "1", ["a"]) and '"' not in compare_url("http://h", "1", ["a"])


def test_the_ui_serves_this_machine_only_unless_asked_and_then_says_what_that_exposes():
    from pipelines.cli.main import build_parser
    from pipelines.cli.ui import exposure_note

    args = build_parser().parse_args(["ui", "run"])
    assert args.host == "127.0.0.1"
    assert exposure_note("127.0.0.1") is None and exposure_note("::1") is None and exposure_note("localhost") is None
    for host in ("0.0.0.0", "10.1.2.3", "my-host.example"):
        note = exposure_note(host)
        assert note.startswith(f"serving on {host}, beyond this machine") and "has the printed link" in note
        assert "it answers to " in note and "change" not in note  # read-only unless asked
    assert "change or delete" in exposure_note("0.0.0.0", writes=True)
    assert build_parser().parse_args(["ui", "run", "--host", "0.0.0.0"]).host == "0.0.0.0"
