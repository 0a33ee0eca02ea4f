"""A script-mode job that fails before its first optimizer step, run from its compiled request in a
SageMaker-shaped /opt/ml tree with only the request's `Environment` (tests/sagemaker_shaped.py): a
failure that does not carry the script's mark is taken as the platform's and exits non-zero (so no
step cache serves it), whatever it says; one the script raised itself is recorded and exits 0 for
the Evaluate step, as a script failure after the first step does."""
import json
import shutil

from sagemaker_shaped import put_assets, run_training

from bakeoff.pipelines.local.definition import Context, parameter_values, resolve
from bakeoff.pipelines.local.store import LocalS3
from bakeoff.pipelines.sagemaker.compiler import compile_pipeline
from bakeoff.pipelines.spec.loader import load_spec
from conftest import ROOT, write_spec

TRN = {"name": "trn1", "instance_type": "ml.trn1.2xlarge", "precision": "fp32"}
G5 = {"name": "g5", "instance_type": "ml.g5.xlarge", "precision": "fp32"}


def _trn_request(tmp_path, arguments=()):
    shutil.copytree(ROOT / "tests" / "assets" / "script_mode" / "xla_loop", tmp_path / "xla_loop")
    spec = write_spec(tmp_path / "bakeoff.yaml", {
        "name": "early", "seeds": 1, "arguments": list(arguments),
        "entrypoint": {"source_dir": "xla_loop", "script": "train.py", "mode": "script",
                       "script_mode": {"metrics": [{"name": "train_loss", "regex": r"step \d+: loss ([0-9.]+)"},
                                                   {"name": "val_loss", "regex": r"validation loss ([0-9.]+)"}],
                                       "seed": {"argument": "seed"}}},
        "legs": [TRN, G5], "parity": {"metric": "val_loss", "margin": 0.05, "baseline": "g5"}})
    compiled = compile_pipeline(load_spec(spec), bucket="b")
    store = LocalS3(tmp_path / "s3")
    put_assets(compiled, store)
    steps = {s["Name"]: s for s in compiled.definition["Steps"]}
    request = resolve(steps["Train-trn1-s0"]["Arguments"], Context(parameter_values(compiled.definition), "e", "arn:e"))
    assert request["Environment"]["BAKEOFF_CONTINUE_ON_FAILURE"] == "1"
    return request, store


def _summary(opt_ml):
    return json.loads((opt_ml / "model" / "summary.json").read_text())


def test_a_device_that_does_not_start_under_a_script_fails_the_step(tmp_path):
    """The script asks torch_xla for its device on an instance whose device runtime is not set up (no
    PJRT_DEVICE): torch_xla raises a RuntimeError from inside itself, which no list names. Before the first
    optimizer step and without the script's mark, it is the platform's: the job exits non-zero."""
    request, store = _trn_request(tmp_path)
    proc, opt_ml = run_training(request, "nodevice-job", tmp_path / "job", store, {"PJRT_DEVICE": ""})
    assert proc.returncode != 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    summary = _summary(opt_ml)
    assert summary["failure_kind"] == "infrastructure", summary
    assert "before the job's first optimizer step" in summary["reason"], summary["reason"]
    assert "PJRT_DEVICE is not set" in summary["reason"] or "PJRT_DEVICE" in (opt_ml / "output" / "failure").read_text()
    assert "never served from SageMaker's step cache" in proc.stderr


def test_a_failure_the_script_raises_itself_before_its_first_step_is_the_scripts(tmp_path):
    request, store = _trn_request(tmp_path, ["--raise-at", "0"])
    proc, opt_ml = run_training(request, "own-job", tmp_path / "job", store, {"PJRT_DEVICE": "CPU"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    summary = _summary(opt_ml)
    assert summary["failure_kind"] == "script", summary
    assert "the script's own check failed at step 0" in summary["reason"], summary["reason"]
    assert "exiting 0 so the pipeline's Evaluate step decides with it" in proc.stderr
