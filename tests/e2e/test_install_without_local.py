"""bakeoff installed as a library, without its `local` extra: `bakeoff run` says what to install before any job
starts (exit 4, one line), instead of starting every job to fail at `import torch` and blaming the script."""
import os
import shutil
import subprocess

import pytest

from conftest import ROOT


def test_a_run_without_the_local_extra_says_what_to_install_and_starts_no_job(tmp_path):
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH (make setup installs it)")
    venv = tmp_path / "venv"
    subprocess.run([uv, "venv", "--quiet", "--python", "python3", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    # The core only (its dependencies from the index, as `pip install bakeoff` would): no torch, no torch_xla.
    installed = subprocess.run([uv, "pip", "install", "--quiet", "--python", str(python), str(ROOT)],
                               capture_output=True, text=True, timeout=600)
    if installed.returncode != 0 and "network" in installed.stderr.lower():
        pytest.skip(f"the package index cannot be reached: {installed.stderr.strip()[-300:]}")
    assert installed.returncode == 0, installed.stderr[-2000:]
    out = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    proc = subprocess.run([str(venv / "bin" / "bakeoff"), "run", str(ROOT / "examples" / "quickstart.yaml"),
                           "--out", str(out), "--no-mlflow"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300)
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.startswith("bakeoff: error:")]
    assert len(lines) == 1, proc.stderr[-2000:]
    assert "lacks torch and torch_xla" in lines[0] and "'bakeoff[local]'" in lines[0] and \
        "no job was started" in lines[0], lines[0]
    assert not (out / "jobs").exists() or not any((out / "jobs").iterdir())
