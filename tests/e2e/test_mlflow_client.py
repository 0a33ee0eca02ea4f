"""MLflow's client in a process of its own (the sink), without a training job; real jobs logging
through it: tests/e2e/test_mlflow_client_jobs.py."""
import json
import os
import subprocess
import sys
import textwrap

import pytest
from mlflow_runs import _run

from conftest import ENTRYPOINTS


def _fresh(code: str, env=None) -> dict:
    """Run `code` in a fresh interpreter that sees the container's runtime; its last line, as JSON."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ENTRYPOINTS), **(env or {})})
    assert proc.returncode == 0, proc.stderr
    return {**json.loads(proc.stdout.strip().splitlines()[-1]), "stderr": proc.stderr}


SINK = """
import json, sys
from bakeoff_runtime.tracking.sink import MlflowSink
sink = MlflowSink({uri!r}, "own", "cpu-s0", tags={{"bakeoff.leg": "cpu"}}, params={{"leg": "cpu", "lr": 0.1}},
                  artifact_location={art!r})
ready = sink.wait_ready(120)
for step in range(3):
    sink.log_metrics({{"loss": 1.0 / (step + 1)}}, step)
result = sink.close("FINISHED", timeout=120)
print(json.dumps({{"ready": ready, "result": result,
                   "mlflow_modules": [m for m in sys.modules if m.split(".")[0] == "mlflow"]}}))
"""


def test_a_sink_made_outside_launch_starts_its_own_client_and_its_process_never_imports_mlflow(tmp_path, mlflow_db):
    from mlflow.tracking import MlflowClient

    uri = mlflow_db  # sqlite:///tmp_path/mlflow.db, new
    out = _fresh(SINK.format(uri=uri, art=str(tmp_path / "art")))
    assert out["ready"] and out["mlflow_modules"] == []
    assert out["result"]["error"] is None and out["result"]["dropped"] == 0
    client = MlflowClient(tracking_uri=uri)
    run = _run(client, "own")
    assert run.info.run_id == out["result"]["run_id"] and run.info.status == "FINISHED"
    assert [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, "loss")] == \
        [(0, 1.0), (1, 0.5), (2, pytest.approx(1 / 3))]
    assert run.data.params == {"leg": "cpu"} and json.loads(run.data.tags["bakeoff.hyperparameters"]) == {"lr": 0.1}


def test_mlflow_that_will_not_import_is_said_once_and_nothing_waits_for_the_run(tmp_path):
    broken = tmp_path / "site" / "mlflow"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('planted: no mlflow in this image')\n")
    code = SINK.format(uri=f"sqlite:///{tmp_path / 'mlflow.db'}", art=str(tmp_path / "art"))
    out = _fresh(code, env={"PYTHONPATH": f"{ENTRYPOINTS}{os.pathsep}{tmp_path / 'site'}"})
    assert out["ready"]  # the sink gave up: a script-mode launcher would start its script at once
    assert out["result"]["run_id"] is None and "mlflow not importable" in out["result"]["error"]
    assert "planted" in out["result"]["error"]
    assert out["stderr"].count("MLflow logging disabled") == 1


def test_a_client_process_that_dies_costs_the_job_nothing_but_its_run(tmp_path, mlflow_db):
    code = SINK.replace('ready = sink.wait_ready(120)',
                        'ready = sink.wait_ready(120)\nsink._client.kill()\nsink._answers.join(60)')
    out = _fresh(code.format(uri=mlflow_db, art=str(tmp_path / "art")))
    assert out["ready"] and "the MLflow client process ended (killed by SIGKILL)" in out["result"]["error"]
    assert out["stderr"].count("MLflow logging disabled") == 1
