"""`pip install .` (not editable) ships the container code as data and still runs the quickstart."""
import json
import os
import subprocess
import sys

from conftest import ROOT

TINY_MODEL = {"model.d_model": 32, "model.n_layers": 1, "model.n_heads": 2, "training.sequence_length": 32}


def test_wheel_install_runs_the_quickstart(tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile",
                    "--target", str(target), str(ROOT)], check=True, timeout=600)
    # Not importable as a top-level package: PyPI's `entrypoints` owns that name.
    assert not (target / "entrypoints").exists()
    assert (target / "pipelines" / "_bundle" / "entrypoints" / "train.py").exists()
    env = {**os.environ, "PYTHONPATH": str(target)}  # ahead of the editable checkout
    where = subprocess.run([sys.executable, "-c", "from pipelines.plan import bundle as b; print(b.entrypoints_dir())"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, check=True).stdout.strip()
    assert where.startswith(str(target))
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli.main", "run",
                           str(ROOT / "examples" / "quickstart.yaml"), "--out", str(out), "--set", "seeds=2",
                           "--set", "training.max_steps=20", "--set", "training.eval_interval=0", "--no-mlflow",
                           # What is under test is the installed package running jobs, not the model: the
                           # smallest one (about 20 s less CPU than the quickstart's own).
                           *(arg for k, v in TINY_MODEL.items() for arg in ("--set", f"{k}={v}"))],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    ev = json.loads((out / "evaluation" / "evaluation.json").read_text())
    assert ev["legs"]["trn1"]["completed"] == 2 and ev["legs"]["p4d"]["completed"] == 2
    code = out / "jobs" / "trn1-s0" / "opt" / "ml" / "code"
    assert (code / "train.py").read_bytes() == (ROOT / "entrypoints" / "train.py").read_bytes()
