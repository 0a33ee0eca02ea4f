"""MLflow's client in a process of its own: a training process never imports mlflow (so its start-up
does not wait on mlflow's import for the GIL), and what reaches MLflow is what the job logged.

launch.py starts the client before the training process, which inherits its pipes; a sink made
anywhere else starts its own. Either way MLflow failing or the job being stopped behaves as before."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

from jobtree import JobLayout
from mlflow_runs import _run

from conftest import ENTRYPOINTS

# A Runtime job that writes what its process had imported at its first step and at its end.
JOB = """
import json, os, sys, time
import torch
from bakeoff_runtime import Runtime

def mlflow_modules():
    return sorted(m for m in sys.modules if m.split(".")[0] == "mlflow")

seen = {}
with Runtime.from_environment() as rt:
    seen["adopted"] = rt.sink._client._popen is None  # the launcher's client, not one of its own
    seen["handed_over"] = os.environ.get("BAKEOFF_MLFLOW_CLIENT")
    model = rt.prepare(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(rt.max_steps):
        x = torch.randn(8, 4)
        loss = (model(x) - 1).pow(2).mean()
        loss.backward()
        rt.optimizer_step(opt)
        opt.zero_grad()
        rt.track_step(step, loss, samples=8, lr=0.1)
        if step == 0:
            seen["at_first_step"] = mlflow_modules()
        time.sleep(float(rt.hp("pause", 0)))
    rt.log_validation(rt.max_steps, val_loss=float(loss))
seen["at_end"] = mlflow_modules()
(rt.env.output_dir / "seen.json").write_text(json.dumps(seen))
"""


def _job(tmp_path, uri, hps=None):
    src = tmp_path / "code"
    src.mkdir()
    (src / "job.py").write_text(textwrap.dedent(JOB))
    layout = JobLayout(tmp_path / "job")
    hps = {"seed": 0, "leg": "cpu", "max_steps": 12, "log_interval": 5, **(hps or {})}
    layout.lay_out(hps, {}, "ml.m5.xlarge")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SM_", "BAKEOFF_", "MLFLOW_"))}
    env.update(layout.environment({}, hps))
    env.update({"BAKEOFF_BACKEND": "cpu", "BAKEOFF_PRECISION": "fp32", "PYTHONPATH": str(ENTRYPOINTS),
                "MLFLOW_TRACKING_URI": uri, "BAKEOFF_MLFLOW_EXPERIMENT": "client", "BAKEOFF_JOB_KEY": "k1",
                "BAKEOFF_MLFLOW_ARTIFACT_LOCATION": str(tmp_path / "artifacts")})
    return [sys.executable, str(ENTRYPOINTS / "launch.py"), str(src / "job.py")], env, layout, src


def test_a_job_logging_to_mlflow_never_imports_it_and_mlflow_gets_what_the_job_logged(tmp_path):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    cmd, env, layout, src = _job(tmp_path, uri)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=src)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads((layout.output / "seen.json").read_text())
    assert seen == {"adopted": True, "handed_over": None, "at_first_step": [], "at_end": []}
    summary = json.loads((layout.model / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["mlflow"]["error"] is None
    assert "MLflow logging disabled" not in proc.stderr

    client = MlflowClient(tracking_uri=uri)
    run = _run(client)
    assert run.info.run_id == summary["mlflow"]["run_id"] and run.info.status == "FINISHED"
    assert run.data.params == {"leg": "cpu", "seed": "0", "backend": "cpu", "ran_on": "cpu on ml.m5.xlarge",
                               "instance_type": "ml.m5.xlarge", "precision": "fp32", "instance_count": "1",
                               "world_size": "1"}
    assert json.loads(run.data.tags["bakeoff.hyperparameters"]) == {"log_interval": 5, "max_steps": 12}
    assert run.data.tags["bakeoff.status"] == "completed" and run.data.tags["bakeoff.job_key"] == "k1"
    # Every value of metrics.jsonl, at its step, and nothing else.
    logged: dict[str, list[tuple[int, float]]] = {}
    for line in (layout.model / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        for key, value in record.items():
            if key not in ("kind", "step", "time_s"):
                logged.setdefault(key, []).append((record["step"], value))
    assert set(run.data.metrics) == set(logged)
    for key, values in logged.items():
        history = sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, key))
        assert history == values, key
    artifacts = [a.path for a in client.list_artifacts(run.info.run_id)]
    assert artifacts == ["summary.json"]


def test_a_job_stopped_by_sigterm_ends_its_run_killed_and_leaves_no_client_behind(tmp_path):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    cmd, env, layout, src = _job(tmp_path, uri, {"max_steps": 2000, "pause": 0.05})
    client = MlflowClient(tracking_uri=uri)
    client.search_experiments()  # the store made before the job opens it, as the local executor does
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=src,
                            start_new_session=True)
    try:
        deadline = time.time() + 240
        while time.time() < deadline and proc.poll() is None:
            exp = client.get_experiment_by_name("client")
            if exp and client.search_runs([exp.experiment_id]):
                break  # the client process made the run
            time.sleep(0.2)
        assert proc.poll() is None, proc.communicate()[1]
        # What stopping a job does (pipelines/local/jobs.py): SIGTERM to its process group, which
        # holds the launcher and the MLflow client it started.
        os.killpg(proc.pid, signal.SIGTERM)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    summary = json.loads((layout.model / "summary.json").read_text())
    assert summary["failure_kind"] == "interrupted" and summary["mlflow"]["error"] is None, stderr[-2000:]
    run = _run(client)
    assert run.info.status == "KILLED" and run.data.tags["bakeoff.status"] == "failed"
    leftovers = subprocess.run(["pgrep", "-s", str(proc.pid)], capture_output=True, text=True).stdout.split()
    assert leftovers == []


def test_a_job_that_fails_before_it_trains_makes_no_run_and_no_warning(tmp_path):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    cmd, env, layout, src = _job(tmp_path, uri)
    env["BAKEOFF_BACKEND"] = "nonesuch"  # the Runtime fails making its backend, after its sink
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=src,
                            start_new_session=True)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode != 0
    assert json.loads((layout.model / "summary.json").read_text())["status"] == "failed"
    assert "nonesuch" in stderr and "MLflow logging disabled" not in stderr
    exp = MlflowClient(tracking_uri=uri).get_experiment_by_name("client")
    assert exp is None or not MlflowClient(tracking_uri=uri).search_runs([exp.experiment_id])
    assert subprocess.run(["pgrep", "-s", str(proc.pid)], capture_output=True, text=True).stdout.split() == []
