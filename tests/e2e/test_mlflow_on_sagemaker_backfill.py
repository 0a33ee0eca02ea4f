"""The Evaluate step back-fills any MLflow run a real job could not log itself, so the parent run
always has all its children."""
import json
import subprocess
import sys

from evaluation_inputs import CONFIG, _jobs

from conftest import ENTRYPOINTS


def test_the_evaluate_step_backfills_runs_the_jobs_could_not_log(tmp_path):
    from mlflow.tracking import MlflowClient

    jobs = tmp_path / "jobs"
    _jobs(jobs, [2.40, 2.51, 2.32], [2.41, 2.50, 2.32])  # no job logged to MLflow
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    cfg = {**CONFIG, "mlflow": {"tracking_uri": uri, "experiment": "bakeoff-backfill",
                                "artifact_location": (tmp_path / "artifacts").as_uri(), "parent_key": "exec-1"}}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    proc = subprocess.run([sys.executable, str(ENTRYPOINTS / "evaluate.py"), "--jobs", str(jobs), "--config",
                           str(tmp_path / "config.json"), "--out", str(tmp_path / "eval")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    ev = json.loads((tmp_path / "eval" / "evaluation.json").read_text())
    assert len(ev["mlflow"]["backfilled"]) == 6
    assert sorted(ev["mlflow"]["children"]) == sorted(ev["mlflow"]["backfilled"])
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("bakeoff-backfill")
    runs = client.search_runs([exp.experiment_id])
    parent = next(r for r in runs if r.data.tags.get("bakeoff.role") == "parent")
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id
                and r.data.tags.get("bakeoff.role") != "summary"]
    assert sorted(r.data.tags["mlflow.runName"] for r in children) == sorted(
        f"{leg}-s{s}" for leg in ("trn", "gpu") for s in range(3))
    child = next(r for r in children if r.data.tags["mlflow.runName"] == "trn-s1")
    assert child.data.tags["bakeoff.backfilled"] == "true" and child.info.status == "FINISHED"
    history = client.get_metric_history(child.info.run_id, "train_loss")
    assert [m.step for m in history] == list(range(0, 100, 10))
