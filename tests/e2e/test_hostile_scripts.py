"""Script mode under a careless or hostile script, through `bakeoff run`: a job ends when its script
ends (what it left running is ended with it, even in a session of its own), and a job cannot move
another job's verdict by rewriting what the Evaluate step reads."""
import json
import os
import subprocess
import textwrap
import time

from conftest import bakeoff, processes_using, write_spec

CPU = {"name": "m5", "instance_type": "ml.m5.xlarge", "precision": "fp32"}
GPU = {"name": "g5", "instance_type": "ml.g5.xlarge", "precision": "fp32"}
METRICS = [{"name": "train_loss", "regex": r"train loss ([0-9.]+)"},
           {"name": "val_loss", "regex": r"val loss ([0-9.]+)"}]


def _spec(tmp_path, script: str, **top):
    src = tmp_path / "src"
    src.mkdir()
    (src / "train.py").write_text(textwrap.dedent(script))
    return write_spec(tmp_path / "bakeoff.yaml", {
        "name": "hostile", "entrypoint": {"source_dir": "src", "script": "train.py", "mode": "script",
                                          "script_mode": {"metrics": METRICS, "seed": {"argument": "seed"}}},
        "legs": [{**CPU, "max_runtime_s": 300}, {**GPU, "max_runtime_s": 300}], "seeds": 1,
        "parity": {"metric": "val_loss", "margin": 0.5, "baseline": "g5"}, **top})


BACKGROUND = """
import argparse, os, subprocess, torch
p = argparse.ArgumentParser(); p.add_argument("--seed", type=int); a = p.parse_args()
os.system("sleep 600 &")                                          # keeps the job's stdout open
subprocess.Popen(["setsid", "sleep", "601"], start_new_session=True)  # a session of its own
m = torch.nn.Linear(2, 1); opt = torch.optim.SGD(m.parameters(), lr=0.1)
for _ in range(5):
    loss = m(torch.ones(4, 2)).pow(2).mean(); opt.zero_grad(); loss.backward(); opt.step()
print(f"train loss {loss.item():.4f}"); print(f"val loss {loss.item() + a.seed * 0.001:.4f}")
"""


def _sleepers() -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "sleep 600" in line or "sleep 601" in line]


def test_a_job_ends_when_its_script_ends_and_takes_what_it_left_running_with_it(tmp_path):
    before = set(_sleepers())
    started = time.monotonic()
    proc = bakeoff("run", _spec(tmp_path, BACKGROUND), "--out", tmp_path / "out", "--no-mlflow", "--jobs", "1")
    took = time.monotonic() - started
    ev = json.loads((tmp_path / "out" / "evaluation" / "evaluation.json").read_text())
    for job in ("m5-s0", "g5-s0"):
        record = json.loads((tmp_path / "out" / "jobs" / job / "job.json").read_text())
        assert record["status"] == "completed" and not record["timed_out"], record
        log = (tmp_path / "out" / "jobs" / job / "stdout.log").read_text()
        assert "the script left 2 process(es) running when it ended; ended with the job" in log, log[-2000:]
    assert took < 240, took  # not the 300 s max runtime either job would otherwise have run to
    assert ev["verdict"] in ("pass", "inconclusive"), ev["first_line"]
    assert set(_sleepers()) <= before, _sleepers()
    assert not processes_using(tmp_path / "out")
    assert proc.returncode in (0, 3), proc.stderr[-2000:]


REWRITER = """
import argparse, glob, json, os, torch
p = argparse.ArgumentParser(); p.add_argument("--seed", type=int); a = p.parse_args()
# The evaluation config sits in the run's local store, beside this job's own /opt/ml: rewrite its margin.
store = os.environ["BAKEOFF_OPT_ML"].split("/jobs/")[0] + "/s3"
for path in glob.glob(store + "/**/eval-config/*/config.json", recursive=True):
    body = json.load(open(path)); body["parity"]["margin"] = 1000.0; json.dump(body, open(path, "w"))
print("train loss 1.0"); print(f"val loss {1.0 if os.environ['BAKEOFF_LEG'] == 'g5' else 9.0}")
"""


def test_a_job_that_rewrites_the_evaluation_config_in_the_store_gets_no_verdict_out_of_it(tmp_path):
    proc = bakeoff("run", _spec(tmp_path, REWRITER), "--out", tmp_path / "out", "--no-mlflow", "--jobs", "1")
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "does not match its address" in proc.stderr and "no verdict" in proc.stderr
    assert not (tmp_path / "out" / "evaluation" / "evaluation.json").exists()
    assert os.path.exists(tmp_path / "out" / "jobs" / "m5-s0" / "job.json")


CROSS_WRITER = """
import argparse, os, time, mlflow, torch
from mlflow.tracking import MlflowClient
p = argparse.ArgumentParser(); p.add_argument("--seed", type=int); a = p.parse_args()
m = torch.nn.Linear(2, 1); opt = torch.optim.SGD(m.parameters(), lr=0.1)
for _ in range(5):
    loss = m(torch.ones(4, 2)).pow(2).mean(); opt.zero_grad(); loss.backward(); opt.step()
print(f"train loss {loss.item():.4f}")
mine = os.environ["MLFLOW_RUN_ID"]
with mlflow.start_run():                       # resumes the job's own run (MLFLOW_RUN_ID)
    mlflow.log_metric("val_loss", 0.5 + a.seed * 0.001, step=5)
# ... and then, for a while, into every other job's run it can find, at the same step.
client = MlflowClient()
experiment = client.get_experiment_by_name(os.environ["MLFLOW_EXPERIMENT_NAME"])
hit = set()
for _ in range(40):
    for run in client.search_runs([experiment.experiment_id], "attributes.status = 'RUNNING'"):
        if run.info.run_id != mine:
            client.log_metric(run.info.run_id, "val_loss", 1000.0, step=5)
            hit.add(run.info.run_id)
    time.sleep(0.25)
print(f"wrote into {len(hit)} other run(s)")
"""


def test_a_job_that_logs_into_other_jobs_mlflow_runs_moves_no_verdict(tmp_path):
    spec = _spec(tmp_path, CROSS_WRITER)
    import yaml

    body = yaml.safe_load(spec.read_text())
    body["entrypoint"]["script_mode"].update({"metrics": METRICS[:1], "metrics_from_mlflow": True})
    body["seeds"] = 2
    spec.write_text(yaml.safe_dump(body))
    proc = bakeoff("run", spec, "--out", tmp_path / "out", "--jobs", "2")
    assert proc.returncode in (0, 1, 3), proc.stdout[-3000:] + proc.stderr[-3000:]
    noted = 0
    for job in ("m5-s0", "m5-s1", "g5-s0", "g5-s1"):
        summary = json.loads((tmp_path / "out" / "jobs" / job / "opt" / "ml" / "model" / "summary.json").read_text())
        assert summary["metrics"]["val_loss"] < 1.0, (job, summary["metrics"])  # its own value, not the planted one
        assert "the script's own MLflow logging (val_loss)" in summary["metric_source"]
        noted += any("values its script did not log" in n for n in summary.get("notes", []))
        log = (tmp_path / "out" / "jobs" / job / "stdout.log").read_text()
        assert "the script left" not in log, log[-2000:]  # the launcher's own MLflow client is not the script's
        assert summary["mlflow"]["error"] is None, summary["mlflow"]
    assert noted >= 1  # the jobs ran two at a time: each pair wrote into the other's run
    ev = json.loads((tmp_path / "out" / "evaluation" / "evaluation.json").read_text())
    assert ev["verdict"] == "pass", ev["first_line"]
