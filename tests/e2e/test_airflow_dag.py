"""examples/orchestration/airflow_dag.py under real Airflow and the real Amazon provider, in a venv of
their own (uv): the DagBag parses it with no import error, and the provider tasks' templated fields render
from what deploy and start push (no AWS call: rendering fills in templates only).

Airflow and the provider are pinned here, not in pyproject.toml: they are the example's, not bakeoff's.
The test skips only when the install fails for want of a network."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from bakeoff.pipelines.sagemaker.execution_labels import DISPLAY_NAME
from conftest import ROOT

AIRFLOW = "apache-airflow==3.3.2"
PROVIDER = "apache-airflow-providers-amazon==9.39.0"
DAG_FILE = ROOT / "examples" / "orchestration" / "airflow_dag.py"
CHECK = ROOT / "tests" / "assets" / "airflow" / "check_dag.py"
# What uv says when it cannot reach the index (a DNS failure, a refused or timed-out connection).
OFFLINE = re.compile(r"dns error|failed to lookup address|Could not connect|Connection refused|Network is "
                     r"unreachable|error sending request|tcp connect error|timed out|offline", re.I)
DEPLOYMENT = {"pipeline_arn": "arn:aws:sagemaker:eu-west-1:123456789012:pipeline/bakeoff-quickstart",
              "pipeline_name": "bakeoff-quickstart", "action": "created", "region": "eu-west-1",
              "bucket": "b", "uploaded": [], "already_present": [], "warnings": []}
ARN = DEPLOYMENT["pipeline_arn"] + "/execution/abc123"


@pytest.fixture(scope="module")
def airflow_python(tmp_path_factory):
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not installed: `make setup` installs bakeoff's environment with it")
    venv = tmp_path_factory.mktemp("airflow") / "venv"
    subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    # bakeoff itself too (the DAG imports it), editable as in .venv (its import hook: hatch_build.py).
    proc = subprocess.run([uv, "pip", "install", "--quiet", "--python", str(python), AIRFLOW, PROVIDER,
                           "-e", str(ROOT)], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 and OFFLINE.search(proc.stderr):
        pytest.skip(f"could not install {AIRFLOW} and {PROVIDER}: no network ({proc.stderr.strip()[-300:]})")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return python


def _checked(python, tmp_path) -> dict:
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path / "airflow"), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
           # Any AWS call would go here and fail: the check must make none.
           "AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_ACCESS_KEY_ID": "none", "AWS_SECRET_ACCESS_KEY": "none",
           "BAKEOFF_SPEC": str(ROOT / "examples" / "quickstart.yaml")}
    env.pop("VIRTUAL_ENV", None)
    proc = subprocess.run([str(python), str(CHECK), str(DAG_FILE), json.dumps({"deploy": DEPLOYMENT, "start": ARN})],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_dag_parses_and_its_provider_tasks_render(airflow_python, tmp_path):
    found = _checked(airflow_python, tmp_path)
    assert found["import_errors"] == {} and found["dags"] == ["bakeoff_trn_vs_gpu"]
    tasks = found["tasks"]
    assert set(tasks) == {"synth", "deploy", "start", "wait", "verdict", "branch_on_verdict", "adopt_trainium",
                          "keep_gpus", "add_seeds"}
    start, wait, verdict = tasks["start"], tasks["wait"], tasks["verdict"]
    provider = "airflow.providers.amazon.aws"
    assert start["class"] == f"{provider}.operators.sagemaker.SageMakerStartPipelineOperator"
    assert wait["class"] == f"{provider}.sensors.sagemaker.SageMakerPipelineSensor"
    # The pipeline bakeoff deployed, in its region, under a name SageMaker takes; the ARN start pushed.
    assert start["rendered"]["pipeline_name"] == "bakeoff-quickstart"
    assert start["rendered"]["region_name"] == wait["rendered"]["region_name"] == "eu-west-1"
    assert DISPLAY_NAME.fullmatch(start["rendered"]["display_name"]), start["rendered"]["display_name"]
    assert wait["rendered"]["pipeline_exec_arn"] == ARN
    # Nobody holds a worker while the bake-off runs: start returns at once, the sensor reschedules.
    assert start["wait_for_completion"] is False and wait["mode"] == "reschedule"
    # The verdict is read after any end of the wait (a fail verdict ends the execution Failed), once started.
    assert verdict["trigger_rule"] == "all_done_min_one_success" and verdict["upstream"] == ["start", "wait"]
    assert tasks["deploy"]["upstream"] == ["synth"] and start["upstream"] == ["deploy"]
    assert wait["upstream"] == ["start"] and tasks["branch_on_verdict"]["upstream"] == ["verdict"]
