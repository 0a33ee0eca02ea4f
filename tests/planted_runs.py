"""Specs of real local runs of tests/assets/verdict/train.py with a planted fault (a hyperparameter):
tests/e2e/test_faults.py, tests/e2e/test_hostile_text_bakeoff.py."""
import shutil

from conftest import ROOT, write_spec

LEGS = [{"name": "m5", "instance_type": "ml.m5.xlarge", "precision": "fp32"},
        {"name": "g5", "instance_type": "ml.g5.xlarge", "precision": "fp32"}]


def _spec(tmp_path, plant="none", seeds=2, legs=LEGS, mlflow=False, **extra):
    if not (tmp_path / "verdict").exists():
        shutil.copytree(ROOT / "tests" / "assets" / "verdict", tmp_path / "verdict")
    return write_spec(tmp_path / "bakeoff.yaml", {
        "name": "faults", "entrypoint": {"source_dir": "verdict", "script": "train.py"},
        "hyperparameters": {"plant": plant},
        "training": {"global_batch_size": 16, "max_steps": 40, "log_interval": 10},
        "legs": legs, "seeds": seeds, "mlflow": {"enabled": mlflow},
        "parity": {"metric": "val_mse", "margin": 0.05, "baseline": "g5"}, **extra})
