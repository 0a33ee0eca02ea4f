"""Scripts in the styles published ones are written in, run unchanged through `bakeoff run` (the
assets are written for these tests, each in the style it names): no verdict passes a leg that did
not train where it says, the verdict's first line names the cause, a torchrun script runs here as
ranks, a script that insists on CUDA runs here through its leg's `local:` block (which the deployed
definition never sees), and a compiled request starts the script as SageMaker's toolkit would."""
import json
import shutil

from sagemaker_shaped import put_assets, run_training

from bakeoff.pipelines.local.definition import Context, parameter_values, resolve
from bakeoff.pipelines.local.store import LocalS3
from bakeoff.pipelines.sagemaker.compiler import compile_pipeline
from bakeoff.pipelines.spec.loader import load_spec
from conftest import ROOT, bakeoff, write_spec

ASSETS = ROOT / "tests" / "assets"
TRN = {"name": "trn1", "instance_type": "ml.trn1.2xlarge", "precision": "fp32"}
G5 = {"name": "g5", "instance_type": "ml.g5.xlarge", "precision": "fp32"}
LOSSES = [{"name": "train_loss", "regex": r"train loss ([0-9.]+)"},
          {"name": "val_loss", "regex": r"val loss ([0-9.]+)"}]


def _script_spec(tmp_path, folder, *, legs, metrics=LOSSES, seeds=2, margin=0.05, **top):
    shutil.copytree(ASSETS / "script_mode" / folder, tmp_path / folder)
    return write_spec(tmp_path / "bakeoff.yaml", {
        "name": folder.replace("_", "-"),
        "entrypoint": {"source_dir": folder, "script": "train.py", "mode": "script",
                       "script_mode": {"metrics": metrics, "seed": {"argument": "seed"}}},
        "legs": legs, "seeds": seeds, "parity": {"metric": "val_loss", "margin": margin, "baseline": "g5"}, **top})


def _run(tmp_path, spec):
    # -v: the lines on how each leg runs here (how a script starts, its local: block) are the details.
    proc = bakeoff("run", spec, "-v", "--out", tmp_path / "out", "--no-mlflow")
    path = tmp_path / "out" / "evaluation" / "evaluation.json"
    assert path.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc, json.loads(path.read_text())


def _summary(tmp_path, job):
    return json.loads((tmp_path / "out" / "jobs" / job / "opt" / "ml" / "model" / "summary.json").read_text())


def _check(ev, name):
    return next(c for c in ev["checks"] if c["name"] == name)


def test_a_torch_accelerator_script_with_a_hand_written_update_cannot_pass_on_trn1(tmp_path):
    # word_language_model's style: --accel (store_true) picks torch.accelerator's device; p.data.add_ updates.
    metrics = [{"name": "train_loss", "regex": r"\| epoch .*\| loss +([0-9.]+) \|"},
               {"name": "val_loss", "regex": r"valid loss +([0-9.]+)"}]
    spec = _script_spec(tmp_path, "accelerator_rnn", legs=[TRN, G5], metrics=metrics, seeds=1, margin=0.1,
                        hyperparameters={"epochs": 1}, arguments=["--accel"])
    proc, ev = _run(tmp_path, spec)
    assert ev["verdict"] == "fail" and proc.returncode == 1
    # The first line names the cause: trn1 never reached XLA, because torch.accelerator does not see it.
    assert ev["first_line"].startswith("fail: not a valid comparison: backend:trn1: trn1 did not train on its neuron "
                                       "backend because the script chose its device through torch.accelerator")
    assert "no XLA graph ran (PyTorch/XLA's counters: 0 executions" in ev["first_line"]
    s = _summary(tmp_path, "trn1-s0")
    # No optimizer ever stepped: the model and the steps came from its training forward passes.
    assert s["evidence"]["optimizer_steps"] == 0 and s["evidence"]["training_forwards"] > 10
    assert s["model"]["devices"] == {"cpu": s["model"]["tensors"]} and "forward pass" in s["model"]["source"]
    assert s["evidence"]["torch_accelerator"]["is_available"] == "False"
    assert s["steps_completed"] == s["evidence"]["training_forwards"]
    # Said before any job started, too.
    assert "picks its device through torch.accelerator" in proc.stderr.split("running")[0]


def test_a_runtime_port_that_steps_its_own_optimizer_on_the_cpu_cannot_pass(tmp_path):
    shutil.copytree(ASSETS / "runtime_port", tmp_path / "port")
    spec = write_spec(tmp_path / "bakeoff.yaml", {
        "name": "port", "entrypoint": {"source_dir": "port", "script": "train.py"},
        "training": {"max_steps": 20, "log_interval": 5}, "legs": [TRN, G5], "seeds": 1,
        "parity": {"metric": "val_loss", "margin": 0.1, "baseline": "g5"}})
    proc, ev = _run(tmp_path, spec)
    assert ev["verdict"] == "fail" and ev["first_line"].startswith("fail: not a valid comparison: backend:trn1")
    why = _check(ev, "backend:trn1")["why"]
    assert "4 of 4 parameter tensors trained on cpu, not xla; no XLA graph ran" in why and "rt.prepare" in why
    s = _summary(tmp_path, "trn1-s0")  # rt.optimizer_step was never called: the global hook saw the optimizer
    assert s["model"]["source"].startswith("optimizer") and s["evidence"]["optimizer_steps"] == 20


def test_a_torchrun_ddp_script_runs_here_as_ranks_and_is_measured(tmp_path):
    # The DDP tutorial's style: reads LOCAL_RANK, init_process_group, DDP, DistributedSampler, positional epochs.
    spec = _script_spec(tmp_path, "ddp_torchrun", arguments=["2", "1"], margin=0.2,
                        legs=[{**TRN, "arguments": ["--device", "xla"]}, {**G5, "instance_type": "ml.g5.12xlarge"}])
    proc, ev = _run(tmp_path, spec)
    assert ev["verdict"] == "pass", ev["first_line"]
    assert "train.py reads LOCAL_RANK (train.py:20): it is distributed" in proc.stderr
    g5, trn1 = _summary(tmp_path, "g5-s0"), _summary(tmp_path, "trn1-s0")
    # The GPU leg's 4 devices stand as 2 gloo ranks on 2 cores; the emulated trn leg is one XLA rank, under torchrun.
    assert g5["world_size"] == g5["evidence"]["processes"] == 2 and trn1["world_size"] == 1
    assert trn1["model"]["devices"] == {"xla": 4} and trn1["evidence"]["xla"]["executions"] > 0
    assert _check(ev, "backend:trn1")["status"] == "passed"


def test_a_script_that_insists_on_cuda_runs_here_through_its_local_block_which_is_never_deployed(tmp_path):
    legs = [{**TRN, "arguments": ["--device", "xla"]}, {**G5, "local": {"arguments": ["--device", "cpu"]}}]
    spec = _script_spec(tmp_path, "cuda_default", legs=legs, margin=0.1, hyperparameters={"epochs": 2})
    proc, ev = _run(tmp_path, spec)
    assert ev["verdict"] == "pass", ev["first_line"]
    assert "its local: block (this machine only, not deployed): arguments --device cpu" in proc.stderr
    assert _summary(tmp_path, "g5-s0")["script_arguments"][-2:] == ["--device", "cpu"]
    # The definition that ran here is the one that deploys: no trace of the block, the same spec hash.
    definition = (tmp_path / "out" / "pipeline.json").read_text()
    without = load_spec(spec)
    without.leg("g5").local = None
    assert json.dumps(compile_pipeline(without, bucket="bakeoff-local").definition, sort_keys=True) == \
        json.dumps(json.loads(definition), sort_keys=True)
    assert "--device\", \"cpu" not in definition


def test_without_the_local_block_the_verdict_says_the_bake_off_could_not_run_and_why(tmp_path):
    spec = _script_spec(tmp_path, "cuda_default", legs=[{**TRN, "arguments": ["--device", "xla"]}, G5], seeds=1,
                        hyperparameters={"epochs": 1})
    proc, ev = _run(tmp_path, spec)
    assert ev["verdict"] == "inconclusive" and proc.returncode == 3
    assert ev["first_line"].startswith("inconclusive: the bake-off could not run: no job of g5 completed (this "
                                       "machine cannot emulate what the script insists on): RuntimeError: Found no "
                                       "NVIDIA driver")
    assert "local:" in ev["first_line"] and "seeds per leg" not in ev["to_decide"]


def test_a_script_failure_is_told_in_the_scripts_own_words(tmp_path):
    # Two CPU legs: the argument reaches the script the same way whatever device it trains on.
    cpu = {"name": "m5", "instance_type": "ml.m5.xlarge", "precision": "fp32"}
    spec = _script_spec(tmp_path, "plain_loop", legs=[cpu, G5], seeds=1, arguments=["--bogus"],
                        metrics=[{"name": "train_loss", "regex": r"step \d+: loss ([0-9.]+)"},
                                 {"name": "val_loss", "regex": r"validation loss ([0-9.]+)"}])
    proc, ev = _run(tmp_path, spec)
    assert "declares no --bogus" in proc.stderr  # validate's warning, before the jobs
    s = _summary(tmp_path, "m5-s0")
    assert s["failure_kind"] == "script" and "train.py: error: unrecognized arguments: --bogus" in s["reason"]
    assert ev["verdict"] == "inconclusive" and "unrecognized arguments: --bogus" in ev["first_line"]
    assert "seeds per leg" not in ev["to_decide"]


def _multi_device_request(tmp_path, folder, legs, **top):
    spec = _script_spec(tmp_path, folder, legs=legs, seeds=1, **top)
    compiled = compile_pipeline(load_spec(spec), bucket="b")
    store = LocalS3(tmp_path / "s3")
    put_assets(compiled, store)
    steps = {s["Name"]: s for s in compiled.definition["Steps"]}
    request = resolve(steps["Train-g5-s0"]["Arguments"], Context(parameter_values(compiled.definition), "e", "arn:e"))
    return request, store


def test_a_compiled_multi_device_request_starts_one_process_for_a_plain_script_and_n_for_a_distributed_one(tmp_path):
    g5x4 = {**G5, "instance_type": "ml.g5.12xlarge"}  # 4 GPUs: SageMaker's toolkit runs a plain script once
    plain, store = _multi_device_request(tmp_path / "plain", "accelerator_rnn", [TRN, g5x4],
                                         hyperparameters={"epochs": 1})
    # As the container runs it: only the request's Environment (no GPU here: its backend stands down to the host).
    proc, opt_ml = run_training(plain, "plain-job", tmp_path / "plain" / "job", store)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("Using device:") == 1 and "one process (the script is not distributed)" in proc.stdout
    assert json.loads((opt_ml / "model" / "summary.json").read_text())["world_size"] == 1
    ddp, store = _multi_device_request(tmp_path / "ddp", "ddp_torchrun", [{**TRN, "arguments": ["--device", "xla"]},
                                                                         g5x4], arguments=["1", "1"])
    assert ddp["Environment"]["BAKEOFF_NPROC_PER_NODE"] == "4"
    proc, opt_ml = run_training(ddp, "ddp-job", tmp_path / "ddp" / "job", store)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "torchrun, 4 process(es) per host" in proc.stdout and "world size 4" in proc.stdout
    assert json.loads((opt_ml / "model" / "summary.json").read_text())["world_size"] == 4
