"""The verdict end to end through `bakeoff run` with real jobs: a regression that real training on a
PyTorch/XLA leg produces is a fail (exit 1). Each other verdict and exit code, the rule fixed before the
data and the looks are tested at the engine layer with the same spec (tests/engine/test_engine_verdict.py,
test_engine_rule_and_looks.py), where the jobs run in a torch-free fake container."""
import json
import shutil

from conftest import ROOT, bakeoff, write_spec

CPU_LEGS = [{"name": "m5", "instance_type": "ml.m5.xlarge", "precision": "fp32"},
            {"name": "g5", "instance_type": "ml.g5.xlarge", "precision": "fp32"}]


def _run(tmp_path, plant, legs=CPU_LEGS, margin=0.05, seeds=3, extra=()):
    shutil.copytree(ROOT / "tests" / "assets" / "verdict", tmp_path / "verdict")
    spec = write_spec(tmp_path / "bakeoff.yaml", {
        "name": "verdict", "entrypoint": {"source_dir": "verdict", "script": "train.py"},
        "hyperparameters": {"plant": plant},
        "training": {"global_batch_size": 16, "max_steps": 40, "log_interval": 10},
        "legs": legs, "seeds": seeds,
        "parity": {"metric": "val_mse", "margin": margin, "baseline": "g5"}})
    proc = bakeoff("run", spec, "--out", tmp_path / "out", "--no-mlflow", *extra)
    path = tmp_path / "out" / "evaluation" / "evaluation.json"
    assert path.exists(), proc.stderr[-3000:]
    return proc, json.loads(path.read_text())


def _parity(ev, leg):
    return next(c for c in ev["checks"] if c["name"] == f"parity:{leg}~g5")


def test_a_backend_dependent_regression_fails(tmp_path):
    legs = [{"name": "trn1", "instance_type": "ml.trn1.2xlarge", "backend": "neuron", "precision": "fp32"},
            CPU_LEGS[1]]
    proc, ev = _run(tmp_path, "lr_on_neuron", legs=legs, margin=0.02)
    assert ev["verdict"] == "fail" and proc.returncode == 1, proc.stderr[-2000:]
    check = _parity(ev, "trn1")
    assert check["status"] == "failed" and check["test"] == "paired"
    lo, hi = check["ci"]
    assert lo > 0.02 or hi < -0.02  # shown beyond the margin, not merely undecided
