"""The Evaluate step decides from its declared inputs alone: the request the local engine ran (the
compiled step, its properties resolved), run again as SageMaker would run it (each ProcessingInput
downloaded to its LocalPath, the container command with its arguments, nothing else from the run
directory), writes the same evaluation.json field for field, given the one config the local run
decided with (its emulated figures and prices are the printed substitution, substitutions.py)."""
import json
import shutil

from sagemaker_shaped import run_processing

from bakeoff.pipelines.local.jobs import Outcome, lay_out
from bakeoff.pipelines.local.store import LocalS3
from fake_container import CPU_LEGS, FakeContainer, Recipe, bakeoff_cli, verdict_spec


class WithChecks(FakeContainer):
    """Collective steps leave a check's result, as collective_check.py writes it; the rest as before."""

    def __call__(self, job, job_dir, store, process, on_line):
        if not job.step_name.startswith("Collective-"):
            return super().__call__(job, job_dir, store, process, on_line)
        model = lay_out(job, job_dir, store) / "model"
        model.mkdir(parents=True, exist_ok=True)
        (model / "collective.json").write_text(json.dumps({
            "schema": "bakeoff.collective/1", "ok": True, "backend": "gloo", "world_size": 2, "hosts": 1,
            "bandwidth": {"all_reduce": {"busbw_GBps": 1.5}}}))
        return Outcome(0, 0.01)


def test_the_evaluate_request_alone_gives_the_local_runs_evaluation(monkeypatch, capsys, tmp_path):
    out = tmp_path / "out"
    # A leg of several devices, so that it has a Collective step (one device has nothing to check).
    legs = [{**CPU_LEGS[1], "name": "g5x", "instance_type": "ml.g5.12xlarge", "collective_check": True}, CPU_LEGS[1]]
    code, _, err = bakeoff_cli(monkeypatch, capsys, WithChecks(Recipe(offset={"g5x": 0.01}, seed_noise=0.02)), "run",
                               verdict_spec(tmp_path, legs=legs, seeds=3), "--out", out, "--no-mlflow")
    local = json.loads((out / "evaluation" / "evaluation.json").read_text())
    assert code in (0, 1, 3), err[-3000:]
    request = json.loads((out / "evaluation" / "request.json").read_text())
    inputs = {i["InputName"]: i["S3Input"] for i in request["ProcessingInputs"]}
    assert set(inputs) == {"code", "config", "collective-g5x"}  # the check, by its step's model artifacts
    # A copy of the store in which the config object is the one the local run decided with.
    store = LocalS3(shutil.copytree(out / "s3", tmp_path / "s3"))
    decided_with = out / "evaluation" / "opt" / "ml" / "processing" / "input" / "config" / "config.json"
    # The checks reached the step as inputs, not patched into its config (as locally they once were).
    assert not {"collective", "preflight"} & set(json.loads(decided_with.read_text()))
    config = store.path(inputs["config"]["S3Uri"])
    objects = [config] if config.is_file() else sorted(config.rglob("*.json"))
    assert objects
    for path in objects:
        path.write_bytes(decided_with.read_bytes())
    proc, opt_ml = run_processing(request, tmp_path / "shaped", store)
    assert proc.returncode == 0, proc.stderr[-3000:]
    shaped = json.loads((opt_ml / "processing" / "evaluation" / "evaluation.json").read_text())
    assert shaped == local  # field for field: nothing else of the run directory reached the step
    assert shaped["verdict"] == local["verdict"] and len(shaped["legs"]["g5x"]["runs"]) == 3
    assert shaped["porting"]["legs"]["g5x"]["collective"]["bandwidth"]["all_reduce"]["busbw_GBps"] == 1.5
