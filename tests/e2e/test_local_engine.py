"""The local executor runs the compiled pipeline: each job is the CreateTrainingJob request
`bakeoff synth` writes, plus the printed substitutions and nothing else; the Evaluate step
and the gate are read from the definition."""
import json

from shared_runs import shared_tiny_run  # noqa: F401  (the fixture `tiny_run`: one real run per invocation)

from bakeoff.pipelines.local.executor import LOCAL_BUCKET
from bakeoff.pipelines.sagemaker import compile_pipeline
from bakeoff.pipelines.spec.loader import load_spec
from bakeoff_runtime.contract import THREAD_ENV
from conftest import bakeoff

# What the local platform may change in a job's environment, and why (substitutions.py).
SUBSTITUTED = {
    "BAKEOFF_BACKEND": "the emulating backend (cuda -> cpu without a GPU)",
    "BAKEOFF_NPROC_PER_NODE": "one process per host",
    "BAKEOFF_COMPILE_CACHE": "s3:// -> the local store", "NEURON_COMPILE_CACHE_URL": "s3:// -> the local store",
}
# No SM_* variable: SageMaker sets none in a container whose entrypoint is overridden.
ADDED = {"PJRT_DEVICE", "BAKEOFF_EMULATED_ON", "BAKEOFF_SPEC_HASH", "BAKEOFF_OPT_ML", "BAKEOFF_JOB_KEY",
         "PYTHONUNBUFFERED",
         # the compiled BAKEOFF_BACKEND, kept beside the emulating one: the job's MLflow `backend` param
         "BAKEOFF_LEG_BACKEND",
         # where a leg runs here, told the ways scripts listen (substitutions.steering): printed per leg
         "USE_TORCH_XLA", "CUDA_VISIBLE_DEVICES",
         "TF_CPP_MIN_LOG_LEVEL", "MLFLOW_TRACKING_URI", "BAKEOFF_MLFLOW_EXPERIMENT", "BAKEOFF_MLFLOW_ARTIFACT_LOCATION"}
# With jobs side by side (--jobs > 1), each job's share of the cores; the run says so in one line.
THREADS = set(THREAD_ENV)  # OMP_NUM_THREADS, MKL_NUM_THREADS, TORCHINDUCTOR_COMPILE_THREADS
REMOVED = {"BAKEOFF_MLFLOW_INSTALL"}  # this Python has MLflow


def _resolved(value, params):
    if isinstance(value, dict):
        if set(value) == {"Get"} and value["Get"].startswith("Parameters."):
            return params[value["Get"].split(".", 1)[1]]
        if set(value) == {"Std:Join"}:
            return value["Std:Join"]["On"].join(str(_resolved(v, params)) for v in value["Std:Join"]["Values"])
        return {k: _resolved(v, params) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolved(v, params) for v in value]
    return value


def test_each_job_is_the_compiled_request_plus_the_printed_substitutions(tiny_run):
    out = tiny_run["out"]
    compiled = compile_pipeline(load_spec(tiny_run["spec"]), bucket=LOCAL_BUCKET)
    params = {p["Name"]: p["DefaultValue"] for p in compiled.definition["Parameters"]}
    steps = {s["Name"]: s for s in compiled.definition["Steps"]}
    stderr = tiny_run["proc"].stderr
    # The terminal has each leg's stand-in; the run directory keeps every substitution.
    said = json.loads((out / "substitutions.json").read_text())["substitutions"]
    assert any(s.startswith("s3:// URIs ->") for s in said) and any(s.startswith("images -> this Python") for s in said)
    assert f"local: every substitution for this machine (store, /opt/ml, images, batching, evaluation): " \
           f"{out / 'substitutions.json'}" in stderr
    assert stderr.count("bakeoff local: leg ") == len({d.name.rsplit("-s", 1)[0] for d in (out / "jobs").iterdir()})
    for job_dir in sorted((out / "jobs").iterdir()):
        leg, seed = job_dir.name.rsplit("-s", 1)
        request = _resolved(steps[f"Train-{leg}-s{seed}"]["Arguments"], params)
        # The request as compiled, byte for byte.
        assert json.loads((job_dir / "request.json").read_text()) == json.loads(json.dumps(request))
        local = json.loads((job_dir / "local.json").read_text())
        # Hyperparameters: only the per-device split of the (unchanged) global batch differs.
        differ = {k for k in request["HyperParameters"] if request["HyperParameters"][k] != local["hyperparameters"][k]}
        assert differ <= {"per_device_batch_size", "gradient_accumulation_steps"}
        assert local["hyperparameters"]["global_batch_size"] == request["HyperParameters"]["global_batch_size"]
        on_disk = json.loads((job_dir / "opt" / "ml" / "input" / "config" / "hyperparameters.json").read_text())
        assert on_disk == local["hyperparameters"]
        # Environment: the compiled one, with exactly the listed substitutions.
        env, compiled_env = local["environment"], request["Environment"]
        for key, value in compiled_env.items():
            if key in REMOVED:
                assert key not in env
            elif key not in SUBSTITUTED:
                assert env[key] == value, key
        assert set(env) - set(compiled_env) <= ADDED | THREADS, set(env) - set(compiled_env) - ADDED - THREADS
        assert env["BAKEOFF_LEG_BACKEND"] == compiled_env["BAKEOFF_BACKEND"]
        if THREADS & set(env):
            assert "training jobs at once (--jobs), each process with" in stderr
        assert not [k for k in env if k.startswith("SM_")]
        # The container command, with /opt/ml and python3 pointed at this machine.
        entry = request["AlgorithmSpecification"]["ContainerEntrypoint"]
        assert local["command"][:2] == entry[:2]
        assert local["command"][2] == entry[2].replace("/opt/ml", str(job_dir / "opt" / "ml")).replace(
            "exec python3 ", f"exec {local['command'][2].split('exec ')[1].split(' ')[0]} ")
        assert set(local["channels"]) == {c["ChannelName"] for c in request["InputDataConfig"]}


def test_the_evaluate_step_and_the_gate_come_from_the_definition(tiny_run):
    out = tiny_run["out"]
    request = json.loads((out / "evaluation" / "request.json").read_text())
    args = request["AppSpecification"]["ContainerArguments"]
    jobs = sorted(a for a in args if a.startswith("--job="))
    names = {j.name: json.loads((j / "job.json").read_text())["training_job_name"]
             for j in (out / "jobs").iterdir()}
    # Each --job argument resolved its Get of the step's TrainingJobName, as SageMaker would.
    assert jobs == sorted(f"--job={name}=s3://{LOCAL_BUCKET}/bakeoff/tiny/jobs/{name}/{tj}/output/output.tar.gz"
                          for name, tj in names.items())
    gate = json.loads((out / "evaluation" / "gate.json").read_text())
    assert gate == []  # a pass takes ParityGate's empty If branch


def test_an_inconclusive_run_ends_in_the_inconclusive_fail_step_with_its_message(tmp_path):
    import shutil

    from conftest import ROOT, write_spec

    shutil.copytree(ROOT / "tests" / "assets" / "verdict", tmp_path / "verdict")
    spec = write_spec(tmp_path / "b.yaml", {
        "name": "gate", "entrypoint": {"source_dir": "verdict", "script": "train.py"},
        "hyperparameters": {"plant": "reshuffle_leg=m5"}, "training": {"global_batch_size": 16, "max_steps": 40},
        "legs": [{"name": "m5", "instance_type": "ml.m5.xlarge", "precision": "fp32"},
                 {"name": "g5", "instance_type": "ml.g5.xlarge", "precision": "fp32"}],
        "seeds": 2, "parity": {"metric": "val_mse", "margin": 0.001, "baseline": "g5"}})
    proc = bakeoff("run", spec, "--out", tmp_path / "out", "--no-mlflow")
    assert proc.returncode == 3, proc.stderr[-2000:]
    gate = json.loads((tmp_path / "out" / "evaluation" / "gate.json").read_text())
    assert [g["step"] for g in gate] == ["VerdictIsFail", "ParityInconclusive"]
    message = gate[1]["message"]
    assert message.startswith("bake-off gate: inconclusive (exit code 3); undecided checks: parity:m5~g5; "
                              "to decide it: parity:m5~g5: ")
    assert f"gate: ParityInconclusive: {message}" in " ".join(proc.stderr.split())
