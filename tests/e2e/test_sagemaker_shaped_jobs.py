"""Each container entrypoint run from its compiled request in a SageMaker-shaped /opt/ml tree, with
an environment that holds only what the request's `Environment` gives (tests/sagemaker_shaped.py):
what a first real run meets, which the local engine must not hide."""
import io
import json
import tarfile

from sagemaker_shaped import model_uri, put_assets, run_processing, run_training

from bakeoff.pipelines.local.definition import Context, parameter_values, resolve
from bakeoff.pipelines.local.store import LocalS3
from bakeoff.pipelines.sagemaker.compiler import compile_pipeline
from bakeoff.pipelines.spec.loader import load_spec
from conftest import ROOT, tiny_spec, write_spec

ON_XLA_CPU = {"PJRT_DEVICE": "CPU"}  # a trn leg here; the Neuron image's device on SageMaker
NO_GPU = {"BAKEOFF_BACKEND": "cpu"}  # a cuda leg on a machine without one


def _compiled(tmp_path, file, spec):
    compiled = compile_pipeline(load_spec(str(write_spec(tmp_path / f"{file}.yaml", spec))), bucket="b")
    store = LocalS3(tmp_path / "s3")
    put_assets(compiled, store)
    steps = {s["Name"]: s for s in compiled.definition["Steps"]}
    return compiled, store, steps, parameter_values(compiled.definition)


def _request(steps, name, params, **ctx):
    return resolve(steps[name]["Arguments"], Context(params, "exec1", "arn:exec1", **ctx))


def _rewrite_collective(store, uri, result):
    body = json.dumps(result).encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("collective.json")
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
    store.path(uri).write_bytes(buf.getvalue())


def _checked_and_trained(tmp):
    """A 2-device trn leg with collective_check, and a one-GPU g5 leg: Collective, then one seed each. (The
    baseline's device count is not what this reads; a multi-GPU job's torchrun launch is test_contract_jobs.py's
    test_multi_device_job_launches_through_torchrun, and the local engine's, test_scaling_trn_sweep.py's.)"""
    spec = tiny_spec(seeds=1)
    spec["training"]["max_steps"] = 6
    spec["legs"][0].update(instance_type="ml.trn1.2xlarge", collective_check=True)
    spec["legs"][1].update(name="g5", instance_type="ml.g5.xlarge")
    spec["parity"]["baseline"] = "g5"
    _, store, steps, params = _compiled(tmp, "collective", spec)
    # PyTorch/XLA's CPU device does not sum across processes: the check's processes use gloo here, as in
    # the local engine (pipelines/local/kinds/collective.py), at the leg's world size.
    check, check_dir = run_training(_request(steps, "Collective-trn1", params), "collective-job", tmp / "collective",
                                    store, {**ON_XLA_CPU, "BAKEOFF_COLLECTIVE_BACKEND": "gloo"})
    artifacts = {"Collective-trn1": model_uri(steps["Collective-trn1"]["Arguments"], "collective-job")}
    runs = {}
    for step, extra in (("Train-trn1-s0", ON_XLA_CPU), ("Train-g5-s0", NO_GPU)):
        request = _request(steps, step, params, model_artifacts=artifacts)
        if step.startswith("Train-trn1"):
            # One XLA CPU process holds the leg's global batch (the local engine's split, for the same reason).
            hps = request["HyperParameters"]
            hps["per_device_batch_size"] = hps["global_batch_size"]
            extra = {**extra, "BAKEOFF_NPROC_PER_NODE": "1"}
        runs[step] = (request, *run_training(request, f"{step}-job", tmp / step, store, extra))
    return {"store": store, "steps": steps, "params": params,
            "check": (check, check_dir), "artifacts": artifacts, "runs": runs}


def test_the_collective_check_then_the_training_jobs_then_evaluate_as_the_pipeline_runs_them(tmp_path):
    """The pipeline's steps in its order, in one test: they read one set of real jobs, which a module
    fixture would run once per pytest-xdist worker that its tests were given to."""
    c = _checked_and_trained(tmp_path)

    # The collective check's result reaches the training jobs of its leg.
    check, check_dir = c["check"]
    assert check.returncode == 0, check.stderr[-3000:]
    result = json.loads((check_dir / "model" / "collective.json").read_text())  # where model.tar.gz is made from
    assert result["ok"] is True and result["world_size"] == 2
    request, proc, opt_ml = c["runs"]["Train-trn1-s0"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (opt_ml / "input" / "data" / "collective").is_dir()  # the channel SageMaker fills from the check
    summary = json.loads((opt_ml / "model" / "summary.json").read_text())
    assert summary["status"] == "completed"

    # The Evaluate step decides from the jobs' outputs as uploaded.
    names = {step: f"{step}-job" for step in c["runs"]}
    request = _request(c["steps"], "Evaluate", c["params"], training_job_names=names, model_artifacts=c["artifacts"])
    proc, opt_ml = run_processing(request, tmp_path / "evaluate", c["store"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    evaluation = json.loads((opt_ml / "processing" / "evaluation" / "evaluation.json").read_text())
    assert evaluation["verdict"] in ("pass", "fail", "inconclusive")
    assert {leg: [r["status"] for r in evaluation["legs"][leg]["runs"]] for leg in ("trn1", "g5")} == \
        {"trn1": ["completed"], "g5": ["completed"]}

    # A failed collective check stops the leg's training job before it trains (last: it rewrites the check's
    # uploaded result).
    _rewrite_collective(c["store"], c["artifacts"]["Collective-trn1"],
                        {"ok": False, "reason": "all_reduce sum 6.0 != 7.0 (planted)"})
    request = _request(c["steps"], "Train-trn1-s0", c["params"], model_artifacts=c["artifacts"])
    proc, opt_ml = run_training(request, "again", tmp_path / "again", c["store"], ON_XLA_CPU)
    # Non-zero although the request sets BAKEOFF_CONTINUE_ON_FAILURE=1: the step fails and is never cached.
    assert proc.returncode == 1, proc.stderr[-3000:]
    summary = json.loads((opt_ml / "model" / "summary.json").read_text())
    assert summary["failure_kind"] == "collective" and "planted" in summary["reason"]
    assert "steps_completed" not in summary

    # The check itself failing, by a wrong result or by an error before it has one (whatever its text), fails
    # its own step: a failed step is never served from SageMaker's step cache.
    planted = {"wrong result": {"BAKEOFF_COLLECTIVE_FAULT_RANK": "1"},
               # NCCL on a machine without a GPU: "Found no NVIDIA driver", which no list of bakeoff's names.
               "crash at start": {"BAKEOFF_COLLECTIVE_BACKEND": "nccl"}}
    for i, (what, extra) in enumerate(planted.items()):
        proc, opt_ml = run_training(_request(c["steps"], "Collective-trn1", c["params"]), f"bad-{i}",
                                    tmp_path / f"bad-{i}", c["store"],
                                    {**ON_XLA_CPU, "BAKEOFF_COLLECTIVE_BACKEND": "gloo", **extra})
        assert proc.returncode != 0, (what, proc.stderr[-3000:])
        if what == "crash at start":
            assert "collective.json" not in {p.name for p in (opt_ml / "model").iterdir()}, "it had no result"
        summary = json.loads((opt_ml / "model" / "summary.json").read_text())
        assert summary["failure_kind"] == "collective", (what, summary)
        assert (opt_ml / "output" / "failure").read_text().strip(), what  # SageMaker's FailureReason


def _preflight(tmp_path, **entry):
    spec = tiny_spec(seeds=1, preflight={"enabled": True}, **entry)
    spec["training"]["global_batch_size"] = 32
    spec["legs"][0]["instance_type"] = "ml.trn1.32xlarge"  # 32 devices; the Preflight step runs one process
    _, store, steps, params = _compiled(tmp_path, "preflight", spec)
    return run_training(_request(steps, "Preflight", params), "preflight-job", tmp_path / "preflight", store)


def test_the_preflight_of_a_32_device_trn_leg_runs_its_one_process_with_the_batch_split_for_it(tmp_path):
    proc, opt_ml = _preflight(tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((opt_ml / "model" / "preflight.json").read_text())
    assert report["verdict"] == "ready"
    assert json.loads((opt_ml / "model" / "summary.json").read_text())["status"] == "completed"


def test_the_preflight_gate_fails_the_step_on_a_planted_cpu_fallback(tmp_path):
    planted = ROOT / "tests" / "assets" / "preflight"
    proc, opt_ml = _preflight(tmp_path, entrypoint={"source_dir": str(planted), "script": "nonzero.py",
                                                    "allow_outside_spec_dir": True})
    assert proc.returncode == 1  # the step fails: no trn job starts
    failure = (opt_ml / "output" / "failure").read_text()  # SageMaker's FailureReason
    assert failure.startswith("preflight: will fall back") and "aten::nonzero" in failure


def test_precompile_runs_the_legs_launch_to_the_end_under_neuron_parallel_compile(tmp_path):
    spec = tiny_spec(seeds=1)
    spec["training"]["eval_interval"] = 3
    spec["legs"][0]["precompile"] = True
    _, store, steps, params = _compiled(tmp_path, "precompile", spec)
    request = _request(steps, "Precompile-trn1", params)
    assert "neuron_parallel_compile python3 launch.py" in request["AlgorithmSpecification"]["ContainerEntrypoint"][2]
    # One XLA CPU process with the leg's global batch, as for the training job above: PyTorch/XLA's CPU device
    # does not sum across processes, so the leg's two would train two unsynchronised copies, at twice the cost.
    request["HyperParameters"]["per_device_batch_size"] = request["HyperParameters"]["global_batch_size"]
    proc, opt_ml = run_training(request, "precompile-job", tmp_path / "precompile", store,
                                {**ON_XLA_CPU, "BAKEOFF_NPROC_PER_NODE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((opt_ml / "model" / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["precompile"] is True
    kinds = [json.loads(line)["kind"] for line in (opt_ml / "model" / "metrics.jsonl").read_text().splitlines()]
    assert kinds.count("eval") >= 2  # one inside the loop and the last: their graphs are in the cache too


def test_a_backend_that_does_not_start_fails_the_step_whatever_its_error_says(tmp_path):
    """The compiled GPU job as compiled (BAKEOFF_BACKEND=cuda) on a machine without a GPU: its backend cannot
    start, which is the platform's by construction (the Runtime raises BackendStartError, whatever the underlying
    error), so the job exits non-zero although BAKEOFF_CONTINUE_ON_FAILURE=1, and no step cache serves it."""
    import torch

    if torch.cuda.is_available():
        import pytest

        pytest.skip("this machine has a GPU: the cuda backend starts")
    spec = tiny_spec(seeds=1)
    _, store, steps, params = _compiled(tmp_path, "nogpu", spec)
    request = _request(steps, "Train-p4d-s0", params)
    assert request["Environment"]["BAKEOFF_BACKEND"] == "cuda"
    assert request["Environment"]["BAKEOFF_CONTINUE_ON_FAILURE"] == "1"
    proc, opt_ml = run_training(request, "nogpu-job", tmp_path / "nogpu", store)
    assert proc.returncode != 0, proc.stderr[-3000:]
    summary = json.loads((opt_ml / "model" / "summary.json").read_text())
    assert summary["failure_kind"] == "infrastructure", summary
    assert "cuda backend did not start" in summary["reason"], summary["reason"]
