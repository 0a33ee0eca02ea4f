"""Script mode end to end through `bakeoff run`: existing training scripts, unchanged, on a trn leg
emulated on PyTorch/XLA's CPU device and a GPU leg on this machine's CPU. Every difference
between the legs is a spec line (tests/assets/script_mode)."""
import json
import shutil

from bakeoff_runtime.contract import parse_phase_line
from conftest import ROOT, bakeoff, write_spec

ASSETS = ROOT / "tests" / "assets" / "script_mode"
TRN = {"name": "trn1", "instance_type": "ml.trn1.2xlarge", "precision": "fp32"}
GPU = {"name": "g5", "instance_type": "ml.g5.xlarge", "precision": "fp32"}
CPU = {"name": "m5", "instance_type": "ml.m5.xlarge", "precision": "fp32"}
PLAIN_METRICS = [{"name": "train_loss", "regex": r"step \d+: loss ([-+0-9.eEnaif]+)"},
                 {"name": "val_loss", "regex": r"validation loss ([-+0-9.eEnaif]+)"}]


def _run(tmp_path, folder, entrypoint, *, legs, hyperparameters=None, seeds=2, margin=0.5, metric="val_loss",
         expect_evaluation=True):
    shutil.copytree(ASSETS / folder, tmp_path / folder)
    spec = write_spec(tmp_path / "bakeoff.yaml", {
        "name": folder.replace("_", "-"),
        "entrypoint": {"source_dir": folder, "script": "train.py", "mode": "script", "script_mode": entrypoint},
        "hyperparameters": hyperparameters or {}, "legs": legs, "seeds": seeds,
        "parity": {"metric": metric, "margin": margin, "baseline": "g5"}})
    # -v: how each leg runs here (its environment, how the script starts) is in the details.
    proc = bakeoff("run", spec, "-v", "--out", tmp_path / "out", "--no-mlflow")
    path = tmp_path / "out" / "evaluation" / "evaluation.json"
    if not expect_evaluation:
        return proc, None
    assert path.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc, json.loads(path.read_text())


def _check(ev, name):
    return next(c for c in ev["checks"] if c["name"] == name)


def _plain(tmp_path, plant="none", trn_args=("--device", "xla"), **kw):
    entry = {"metrics": PLAIN_METRICS, "seed": {"argument": "seed"}, "units_per_step": 32}
    return _run(tmp_path, "plain_loop", entry, legs=[{**TRN, "arguments": list(trn_args)}, GPU],
                hyperparameters={"steps": 30, "plant": plant}, **kw)


def _job_summary(tmp_path, job):
    return json.loads((tmp_path / "out" / "jobs" / job / "opt" / "ml" / "model" / "summary.json").read_text())


def test_an_unchanged_argparse_script_gets_a_verdict_from_its_printed_metrics(tmp_path):
    proc, ev = _plain(tmp_path)
    assert ev["verdict"] == "pass" and proc.returncode == 0, proc.stdout[-3000:]
    assert _check(ev, "backend:trn1")["status"] == "passed"
    assert _check(ev, "same-model")["status"] == "passed" and _check(ev, "seeds:trn1")["status"] == "passed"
    s = _job_summary(tmp_path, "trn1-s1")
    # The script got its hyperparameters and seed as SageMaker passes them, plus the leg's own arguments.
    assert s["script_arguments"] == ["--plant", "none", "--seed", "1", "--steps", "30", "--device", "xla"]
    assert s["mode"] == "script" and s["model"]["devices"] == {"xla": 4} and s["steps_completed"] == 30
    assert s["compile"]["compiled_graphs"] >= 1 and s["throughput"]["samples_per_sec"] > 0
    assert s["metrics"]["val_loss"] > 0 and s["first_train_loss"] > s["final_train_loss"]
    # The phases the probe can tell of an unchanged script: compiling up to its first step's sync on the XLA
    # leg, then training (what the bars show); an eager leg has nothing to compile. Its evaluation is the script's.
    def phases(job):
        log = (tmp_path / "out" / "jobs" / job / "stdout.log").read_text().splitlines()
        return [p for p in map(parse_phase_line, log) if p]

    assert phases("trn1-s1") == ["compiling", "training"] and phases("g5-s1") == ["training"]
    # What porting cost is the spec's per-leg line, not code.
    porting = ev["porting"]["legs"]["trn1"]
    assert porting["code"]["lines_differ"] == 0 and porting["spec_lines"] == [
        "arguments: --device xla (baseline: (none))"]
    report = (tmp_path / "out" / "evaluation" / "report.html").read_text()
    assert "arguments: --device xla" in report


def test_a_trn_leg_whose_script_chose_the_host_cpu_does_not_pass(tmp_path):
    # One seed a leg: the backend check fails the bake-off on its own, whatever the seeds say.
    proc, ev = _plain(tmp_path, trn_args=(), seeds=1)
    assert ev["verdict"] == "fail" and proc.returncode == 1
    check = _check(ev, "backend:trn1")
    assert check["status"] == "failed" and "trained on cpu, not xla" in check["why"]
    # The first line of the verdict (the pipeline gate's) names the check that failed.
    gate = next(line for line in proc.stderr.splitlines() if "gate:" in line)
    assert "backend:trn1" in gate, proc.stderr[-2000:]
    assert "legs[].arguments" in check["why"]  # script mode's fix: a spec line, not code


def test_a_fallback_in_the_step_shows_on_the_first_screen(tmp_path):
    proc, ev = _plain(tmp_path, plant="nonzero", seeds=1)  # a check of each job's step: one seed a leg shows it
    check = _check(ev, "blockers:trn1")
    assert check["status"] == "warning", check
    assert check["recompiles_after_warmup"] > 2 or check["fallback_ops"], check
    assert "not representative" in check["why"]
    assert "blockers:trn1" in proc.stdout and "PT_XLA_DEBUG_LEVEL" in proc.stdout  # script mode has no preflight


def test_the_same_crash_on_every_leg_is_a_script_bug(tmp_path):
    # One seed a leg: the same crash on every leg that ran the seed is the script's, however many seeds ran.
    proc, ev = _plain(tmp_path, plant="crash", seeds=1)
    assert ev["verdict"] != "pass"
    advice = " ".join(c["why"] for c in ev["checks"] if c["name"].startswith("stability:"))
    assert "a bug in the script" in advice and "more seeds will not help" in advice
    assert "shapes do not match" in advice
    s = _job_summary(tmp_path, "trn1-s0")
    assert s["status"] == "failed" and s["mode"] == "script" and s["steps_completed"] == 3


def test_a_script_that_ignores_its_seed_is_named(tmp_path):
    # Two CPU legs: whether a leg's seeds differ is read from its own runs, whatever device they trained on.
    entry = {"metrics": PLAIN_METRICS, "seed": {"argument": "seed"}, "units_per_step": 32}
    proc, ev = _run(tmp_path, "plain_loop", entry, legs=[CPU, GPU],
                    hyperparameters={"steps": 30, "plant": "fixed_seed"})
    # Evidence about the harness, not the legs: bit-identical training losses on every seed leave the verdict
    # undecided with the fix, never a `fail` of the legs.
    assert _check(ev, "seeds:m5")["status"] == "inconclusive"
    check = _check(ev, "seeds:g5")
    assert check["status"] == "inconclusive" and "ignore its seed" in check["why"]
    assert "training loss" in check["why"] and "entrypoint.script_mode.seed" in ev["to_decide"]
    assert ev["verdict"] == "inconclusive" and proc.returncode == 3


def test_a_metric_regex_that_never_matches_stops_after_the_first_seed(tmp_path):
    shutil.copytree(ASSETS / "plain_loop", tmp_path / "plain_loop")
    metrics = [PLAIN_METRICS[0], {"name": "val_loss", "regex": r"valdiation loss ([0-9.]+)"}]
    spec = write_spec(tmp_path / "bakeoff.yaml", {
        "name": "typo", "entrypoint": {"source_dir": "plain_loop", "script": "train.py", "mode": "script",
                                       "script_mode": {"metrics": metrics}},
        # Two CPU legs: the regex reads the script's output, whatever device it trained on.
        "hyperparameters": {"steps": 10}, "legs": [CPU, GPU], "seeds": 3,
        "parity": {"metric": "val_loss", "margin": 0.5, "baseline": "g5"}})
    proc = bakeoff("run", spec, "--out", tmp_path / "out", "--no-mlflow")
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "val_loss" in proc.stderr and "train_loss" in proc.stderr
    for later in (p for p in (tmp_path / "out" / "jobs").iterdir() if not p.name.endswith("-s0")):
        record = json.loads((later / "job.json").read_text())  # started beside the first seed: stopped
        assert record["status"] == "failed" and "interrupted" in record["reason"], record


GPT_ENTRY = {"argument_style": "equals", "seed": {"argument": "seed"}, "unit": "tokens", "units_per_step": 256,
             "metrics": [{"name": "train_loss", "regex": r"iter \d+: loss ([0-9.]+)"},
                         {"name": "val_loss", "regex": r"val loss ([0-9.]+)"}]}


def test_a_nanogpt_style_script_configured_by_key_equals_value_runs_unchanged(tmp_path):
    # One block (the script's default is two): the trn leg's time is XLA compiling the step, and what is under
    # test is the configuration reaching the script, not the model.
    proc, ev = _run(tmp_path, "keyvalue_gpt", GPT_ENTRY, legs=[{**TRN, "arguments": ["--device=xla"]}, GPU],
                    hyperparameters={"weight_tying": False, "max_iters": 40, "n_layer": 1})
    assert ev["verdict"] == "pass", proc.stdout[-3000:]
    s = _job_summary(tmp_path, "trn1-s0")
    assert s["script_arguments"] == ["--max_iters=40", "--n_layer=1", "--seed=0", "--weight_tying=False",
                                     "--device=xla"]
    assert s["throughput"]["unit"] == "tokens" and s["throughput"]["tokens_per_sec"] > 0


def test_tied_weights_that_the_move_to_xla_unties_fail_the_same_model_check(tmp_path):
    # The script ties its embedding and output weights; PyTorch/XLA's .to() copies them apart.
    # One seed a leg: the same-model check compares the legs' models, not seeds, and fails the bake-off alone.
    # One block: the untied pair (embedding and output, 64x32) is outside the blocks, whatever their number.
    proc, ev = _run(tmp_path, "keyvalue_gpt", GPT_ENTRY, legs=[{**TRN, "arguments": ["--device=xla"]}, GPU],
                    hyperparameters={"max_iters": 20, "n_layer": 1}, seeds=1)
    check = _check(ev, "same-model")
    assert ev["verdict"] == "fail" and check["status"] == "failed"
    assert "trn1 has 2,048 more parameters than g5" in check["why"] and "1 more tensor of shape 64x32" in check["why"]
    assert "re-tie them after `model.to(device)`" in check["why"]
    assert "FAIL same-model" in proc.stdout


def test_a_hugging_face_trainer_script_is_measured_from_its_trainer_state(tmp_path):
    # The GPU leg as it deploys: the local engine tells it to stay off the XLA device that transformers would
    # pick on its own wherever torch_xla imports (USE_TORCH_XLA=0, printed). Only the trn leg's spec line differs:
    # an optimizer that runs on XLA (the Trainer's fused AdamW does not).
    # Ten steps, evaluated twice on the way, of a one-layer GPT-2 (the script's n_layer): the trn leg's time is
    # XLA compiling the Trainer's graphs, and more steps or layers would only make them run longer.
    hps = {"max_steps": 10, "per_device_train_batch_size": 8, "learning_rate": 0.001, "logging_steps": 5,
           "eval_strategy": "steps", "eval_steps": 5, "dataloader_drop_last": True, "report_to": "none",
           "n_layer": 1}
    proc, ev = _run(tmp_path, "hf_trainer", {"hf_trainer_state": True, "seed": {"argument": "seed"},
                                             "unit": "tokens", "units_per_step": 256},
                    legs=[{**TRN, "hyperparameters": {"optim": "adamw_torch"}}, GPU],
                    hyperparameters=hps, metric="eval_loss")
    assert ev["verdict"] == "pass", proc.stdout[-3000:]
    assert "USE_TORCH_XLA=0" in proc.stderr  # the substitution, said
    s = _job_summary(tmp_path, "trn1-s1")
    assert s["metric_source"].startswith("trainer_state.json") and s["metrics"]["eval_loss"] > 0
    assert s["model"]["devices"] == {"xla": s["model"]["tensors"]} and s["first_train_loss"] is not None
    assert _check(ev, "backend:trn1")["status"] == "passed"
    gpu = _job_summary(tmp_path, "g5-s1")  # its emulation: the CPU, not XLA
    assert gpu["model"]["devices"] == {"cpu": gpu["model"]["tensors"]} and "xla" not in gpu["evidence"]
    assert _check(ev, "backend:g5")["status"] == "unchecked" and "as its emulation intends" in \
        _check(ev, "backend:g5")["why"]
    assert ev["porting"]["legs"]["trn1"]["spec_lines"] == ["hyperparameter optim: adamw_torch (baseline: (unset))"]
    # The losses from trainer_state.json are plotted.
    assert all(len(r["curves"]["train_loss"]) >= 2 for f in ev["legs"].values() for r in f["runs"])


def test_a_script_that_logs_to_mlflow_itself_logs_into_the_jobs_child_run(tmp_path):
    shutil.copytree(ASSETS / "plain_loop", tmp_path / "plain_loop")
    spec = write_spec(tmp_path / "bakeoff.yaml", {
        "name": "own-mlflow", "entrypoint": {
            "source_dir": "plain_loop", "script": "train.py", "mode": "script",
            "script_mode": {"metrics": PLAIN_METRICS[:1], "metrics_from_mlflow": True, "seed": {"argument": "seed"}}},
        "hyperparameters": {"steps": 20, "log-to-mlflow": 1},
        # Two CPU legs: where the script's own MLflow calls land does not depend on the device it trained on.
        "legs": [CPU, GPU], "seeds": 2,
        "parity": {"metric": "val_mse", "margin": 0.5, "baseline": "g5"}})
    proc = bakeoff("run", spec, "--out", tmp_path / "out")
    ev = json.loads((tmp_path / "out" / "evaluation" / "evaluation.json").read_text())
    assert ev["verdict"] == "pass", proc.stdout[-3000:] + proc.stderr[-2000:]
    s = _job_summary(tmp_path, "m5-s0")
    assert "the script's own MLflow logging (val_mse)" in s["metric_source"]
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'out' / 'mlflow' / 'mlflow.db'}")
    run = client.get_run(s["mlflow"]["run_id"])
    # One child run per job: the script's own metric and the one read from its output, side by side.
    assert {"val_mse", "train_loss"} <= set(run.data.metrics) and run.data.tags["bakeoff.leg"] == "m5"
    assert run.info.status == "FINISHED" and not s["mlflow"]["error"]


def test_the_script_mode_example_runs_an_mnist_style_cnn_unchanged_to_a_verdict(tmp_path):
    proc = bakeoff("run", ROOT / "examples" / "script_mode.yaml", "--out", tmp_path / "out", "--no-mlflow",
                   "--set", "seeds=2")
    ev = json.loads((tmp_path / "out" / "evaluation" / "evaluation.json").read_text())
    assert ev["verdict"] == "pass", proc.stdout[-3000:] + proc.stderr[-2000:]
    assert _check(ev, "backend:trn1")["status"] == "passed" and _check(ev, "same-model")["status"] == "passed"
    s = _job_summary(tmp_path, "trn1-s0")
    assert s["metrics"]["val_accuracy"] > 0 and s["script_arguments"][-2:] == ["--device", "xla"]
    # A brought script starts cold, as SageMaker's toolkit starts it: no warm interpreter was started for it.
    assert not (tmp_path / "out" / "warm").exists()
