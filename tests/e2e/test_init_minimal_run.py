"""`bakeoff init DIR`: the minimal template runs to a verdict."""
import json

from bakeoff.pipelines.cli.init import init_project
from conftest import bakeoff


def test_minimal_template_runs_to_a_verdict(tmp_path):
    init_project(tmp_path / "proj", "minimal")
    out = tmp_path / "out"
    proc = bakeoff("run", tmp_path / "proj" / "bakeoff.yaml", "--out", out, "--no-mlflow",
                   "--set", "training.max_steps=8", "--set", "seeds=2")
    assert proc.returncode in (0, 3), proc.stdout + proc.stderr  # a verdict, not a crash
    evaluation = json.loads((out / "evaluation" / "evaluation.json").read_text())
    assert evaluation["verdict"] in ("pass", "inconclusive")
    for job in ("trn1-s0", "trn1-s1", "g5-s0", "g5-s1"):
        summary = json.loads((out / "jobs" / job / "opt" / "ml" / "model" / "summary.json").read_text())
        assert summary["status"] == "completed" and summary["steps_completed"] == 8
