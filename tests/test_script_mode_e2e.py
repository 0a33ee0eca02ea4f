"""Script mode end to end through `bakeoff run`: existing training scripts, unchanged, on a trn leg
emulated on PyTorch/XLA's CPU device and a GPU leg on this machine's CPU. Every difference
between the legs is a spec line (tests/assets/script_mode)."""
import json
import shutil

import pytest

from conftest import ROOT, bakeoff, write_spec

pytestmark = pytest.mark.slow  # real bake-offs, PyTorch/XLA

ASSETS = ROOT / "tests" / "assets" / "script_mode"
TRN = {"name": "trn1", "instance_type": "ml.trn1.2xlarge", "precision": "fp32"}
GPU = {"name": "g5", "instance_type": "ml.g5.xlarge", "precision": "fp32"}
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
    proc = bakeoff("run", spec, "--out", tmp_path / "out", "--no-mlflow")
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
    # What porting cost is the spec's per-leg line, not code.
    porting = ev["porting"]["legs"]["trn1"]
    assert porting["code"]["lines_differ"] == 0 and porting["spec_lines"] == [
        "arguments: --device xla (baseline: (none))"]
    report = (tmp_path / "out" / "evaluation" / "report.html").read_text()
    assert "arguments: --device xla" in report


def test_a_trn_leg_whose_script_chose_the_host_cpu_does_not_pass(tmp_path):
    proc, ev = _plain(tmp_path, trn_args=())
    assert ev["verdict"] == "fail" and proc.returncode == 1
    check = _check(ev, "backend:trn1")
    assert check["status"] == "failed" and "trained on cpu, not xla" in check["why"]
    # The first line of the verdict (the pipeline gate's) names the check that failed.
    gate = next(line for line in proc.stderr.splitlines() if "gate:" in line)
    assert "backend:trn1" in gate, proc.stderr[-2000:]
    assert "legs[].arguments" in check["why"]  # script mode's fix: a spec line, not code


def test_a_fallback_in_the_step_shows_on_the_first_screen(tmp_path):
    proc, ev = _plain(tmp_path, plant="nonzero")
    check = _check(ev, "blockers:trn1")
    assert check["status"] == "warning", check
    assert check["recompiles_after_warmup"] > 2 or check["fallback_ops"], check
    assert "not representative" in check["why"]
    assert "blockers:trn1" in proc.stdout and "bakeoff preflight" in proc.stdout


def test_the_same_crash_on_every_leg_is_a_script_bug(tmp_path):
    proc, ev = _plain(tmp_path, plant="crash")
    assert ev["verdict"] != "pass"
    advice = " ".join(c["why"] for c in ev["checks"] if c["name"].startswith("stability:"))
    assert "a bug in the script" in advice and "more seeds will not help" in advice
    assert "shapes do not match" in advice
    s = _job_summary(tmp_path, "trn1-s0")
    assert s["status"] == "failed" and s["mode"] == "script" and s["steps_completed"] == 3


def test_a_script_that_ignores_its_seed_is_named(tmp_path):
    proc, ev = _plain(tmp_path, plant="fixed_seed")
    check = _check(ev, "seeds:g5")
    assert check["status"] == "failed" and "ignores its seed" in check["why"]
    assert ev["verdict"] == "fail"


def test_a_metric_regex_that_never_matches_stops_after_the_first_seed(tmp_path):
    shutil.copytree(ASSETS / "plain_loop", tmp_path / "plain_loop")
    metrics = [PLAIN_METRICS[0], {"name": "val_loss", "regex": r"valdiation loss ([0-9.]+)"}]
    spec = write_spec(tmp_path / "bakeoff.yaml", {
        "name": "typo", "entrypoint": {"source_dir": "plain_loop", "script": "train.py", "mode": "script",
                                       "script_mode": {"metrics": metrics}},
        "hyperparameters": {"steps": 10}, "legs": [{**TRN, "arguments": ["--device", "xla"]}, GPU], "seeds": 3,
        "parity": {"metric": "val_loss", "margin": 0.5, "baseline": "g5"}})
    proc = bakeoff("run", spec, "--out", tmp_path / "out", "--no-mlflow")
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "val_loss" in proc.stderr and "train_loss" in proc.stderr
    assert not (tmp_path / "out" / "jobs" / "trn1-s1").exists()
