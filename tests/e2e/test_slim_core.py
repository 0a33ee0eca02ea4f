"""bakeoff's core without extras, from its built wheel: no numpy or scipy, and what a program that only deploys,
starts and polls a pipeline needs still runs, over HTTP against a moto server: the Python API from a fresh
virtualenv, and the Step Functions example's handler from its Lambda package (a folder of the wheel and what it
depends on, as `pip install --target` makes it, with nothing else on the path, as Lambda runs it). A command
that needs the statistics says the `stats` extra's install line and exits 2."""
import json
import os
import shutil
import subprocess

import pytest
from moto_aws import API_BUCKET as BUCKET
from moto_aws import QUICKSTART, ROLE, recorded_execution

from bakeoff.pipelines.extras import STATS_INSTALL
from conftest import ROOT, uv_or_skip

HANDLER = ROOT / "examples" / "orchestration" / "step_functions" / "handler.py"
# Lambda's limit on a function's code unpacked, layers included, in bytes as Lambda's error states it
# (docs.aws.amazon.com/lambda/latest/dg/limits.html; repost.aws/questions/QUt1Cc15fbTkWsVXPNmj6MNQ).
LAMBDA_UNZIPPED_LIMIT = 262_144_000


def _install(args: list[str]) -> None:
    """`uv pip install` the core's dependencies from the index, as `pip install bakeoff` would."""
    proc = subprocess.run([uv_or_skip(), "pip", "install", "--quiet", *args], capture_output=True, text=True,
                          timeout=600)
    if proc.returncode != 0 and "network" in proc.stderr.lower():
        pytest.skip(f"the package index cannot be reached: {proc.stderr.strip()[-300:]}")
    assert proc.returncode == 0, proc.stderr[-2000:]


def _venv(path) -> str:
    subprocess.run([uv_or_skip(), "venv", "--quiet", "--python", "python3", str(path)], check=True, timeout=300)
    return str(path / "bin" / "python")


def _clean_env(**extra: str) -> dict[str, str]:
    # Nothing of this checkout's environment: its editable bakeoff and its numpy must not be found.
    return {**{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}, **extra}


# Deploy, start and poll through bakeoff's Python API, then says where bakeoff came from and whether anything
# imported numpy or scipy on the way, and which top-level modules the path imported.
API_PATH = """
import json, sys
from bakeoff import Deployment, TimedOut, deploy, start, wait
spec, role, bucket = sys.argv[1:4]
deployment = deploy(spec, role_arn=role, bucket=bucket)
execution = start(Deployment.model_validate(json.loads(deployment.model_dump_json())), {"MaxSteps": 10})
try:
    state = wait(execution, timeout_s=0).status  # one look, as the handler's poll
except TimedOut:
    state = "Executing"
import bakeoff.pipelines
print(json.dumps({"pipeline_arn": deployment.pipeline_arn, "execution_arn": execution.arn, "state": state,
                  "pipelines": bakeoff.pipelines.__file__, "imported": sorted({m.split(".")[0] for m in sys.modules})}))
"""


def test_the_core_installs_without_numpy_or_scipy_and_deploys_starts_and_polls(bakeoff_wheel, aws, tmp_path):
    python = _venv(tmp_path / "venv")
    _install(["--python", python, str(bakeoff_wheel)])
    present = subprocess.run([python, "-c", "import importlib.util as u; print([m for m in ('numpy', 'scipy') "
                              "if u.find_spec(m)])"], capture_output=True, text=True, check=True, env=_clean_env())
    assert present.stdout.strip() == "[]"

    script = tmp_path / "api_path.py"
    script.write_text(API_PATH)
    proc = subprocess.run([python, str(script), str(QUICKSTART), ROLE, BUCKET], capture_output=True, text=True,
                          env=_clean_env(), cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["pipelines"].startswith(str(tmp_path / "venv"))  # the wheel's bakeoff, not this checkout's
    assert out["pipeline_arn"] == "arn:aws:sagemaker:us-east-1:123456789012:pipeline/bakeoff-quickstart"
    assert out["execution_arn"].startswith(out["pipeline_arn"] + "/execution/")
    assert out["state"] == "Succeeded"  # moto's executions end at once
    assert not {"numpy", "scipy", "torch", "mlflow", "sagemaker"} & set(out["imported"]), out["imported"]
    # What the AWS side left: the pipeline bakeoff compiled, and the execution it started with its parameter.
    import boto3

    sm = boto3.client("sagemaker", region_name="us-east-1")
    assert json.loads(sm.describe_pipeline(PipelineName="bakeoff-quickstart")["PipelineDefinition"])["Steps"]
    params = sm.list_pipeline_parameters_for_execution(PipelineExecutionArn=out["execution_arn"])
    assert {"Name": "MaxSteps", "Value": "10"} in params["PipelineParameters"]

    bakeoff = str(tmp_path / "venv" / "bin" / "bakeoff")
    for args in (["plan", str(QUICKSTART)], ["validate", str(QUICKSTART), "--from", str(tmp_path)]):
        proc = subprocess.run([bakeoff, *args], capture_output=True, text=True, env=_clean_env(), cwd=tmp_path,
                              timeout=120)
        assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
        what = "bakeoff plan" if args[0] == "plan" else "bakeoff validate --from"
        assert proc.stderr.splitlines() == [
            f"bakeoff: error: {what} needs numpy and scipy, which are not installed here: {STATS_INSTALL} "
            "(or uv sync --extra stats)"], proc.stderr
    # What needs no statistics still runs: the spec checked offline.
    proc = subprocess.run([bakeoff, "validate", str(QUICKSTART)], capture_output=True, text=True, env=_clean_env(),
                          cwd=tmp_path, timeout=120)
    assert proc.returncode == 0 and "ok: quickstart" in proc.stdout, proc.stderr[-2000:]


# The Lambda runtime's side: the handler module from the package folder, called with each state's input as the
# state machine passes it. ListPipelineExecutionSteps, which moto lacks, answers from a recorded file.
LAMBDA_PATH = """
import datetime, json, sys, types
import boto3
recorded = json.load(open(sys.argv[1]))
for step in recorded["PipelineExecutionSteps"]:
    for key in ("StartTime", "EndTime"):
        if key in step:
            step[key] = datetime.datetime.fromisoformat(step[key])
session = boto3.session.Session(region_name="us-east-1")
session.events.register("before-call.sagemaker.ListPipelineExecutionSteps",
                        lambda **kw: (types.SimpleNamespace(status_code=200, headers={}), recorded))
from handler import handler
spec, role, bucket = sys.argv[2:5]
out = {"deploy": handler({"action": "deploy", "spec": spec, "role_arn": role, "bucket": bucket}, None, session)}
out["start"] = handler({"action": "start", "deployment": out["deploy"]["deployment"]}, None, session)
out["poll"] = handler({"action": "poll", "execution": out["start"]["execution"]}, None, session)
out["report"] = handler({"action": "report", "execution": out["poll"]["execution"]}, None, session)
import bakeoff.pipelines
out["pipelines"] = bakeoff.pipelines.__file__
out["imported"] = sorted({m.split(".")[0] for m in sys.modules})
print(json.dumps(out))
"""


def test_the_step_functions_handler_runs_from_its_lambda_package(bakeoff_wheel, aws, tmp_path):
    """The package as the example's docstring builds it (for this machine's Python rather than Lambda's, so that
    it runs here), under Lambda's unpacked limit, runs the state machine's tasks with nothing else installed."""
    package = tmp_path / "package"
    _install(["--target", str(package), str(bakeoff_wheel)])
    shutil.copy(HANDLER, package / "handler.py")
    shutil.copy(QUICKSTART, package / "bakeoff.yaml")
    assert not (package / "numpy").exists() and not (package / "scipy").exists()
    size = sum(f.stat().st_size for f in package.rglob("*") if f.is_file() and not f.is_symlink())
    assert size < LAMBDA_UNZIPPED_LIMIT, size

    recorded = tmp_path / "steps.json"
    recorded.write_text(json.dumps(recorded_execution("pass"), default=lambda d: d.isoformat()))
    script = tmp_path / "lambda_path.py"
    script.write_text(LAMBDA_PATH)
    bare = _venv(tmp_path / "bare")  # a Python with nothing installed; the package folder is its path, as on Lambda
    proc = subprocess.run([bare, str(script), str(recorded), "bakeoff.yaml", ROLE, BUCKET], capture_output=True,
                          text=True, env=_clean_env(PYTHONPATH=str(package)), cwd=package, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["pipelines"].startswith(str(package))
    assert out["deploy"]["deployment"]["pipeline_arn"].endswith(":pipeline/bakeoff-quickstart")
    assert out["poll"]["finished"] is True and out["poll"]["status"] == "Succeeded"
    # The report re-costs the evaluation by billed time: that needs no statistics (no decision: in the spec).
    assert out["report"]["verdict"] == "pass" and out["report"]["exit_code"] == 0
    assert not {"numpy", "scipy", "torch", "mlflow", "sagemaker"} & set(out["imported"]), out["imported"]
