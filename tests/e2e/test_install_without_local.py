"""bakeoff installed as a library, without its `local` extra: the offline commands work, and `bakeoff run`
says what to install before any job starts (exit 2: how bakeoff was installed is a usage problem, not a run
that failed; one line), instead of starting every job to fail at `import torch` and blaming the script."""
import subprocess

from conftest import ROOT, fresh_venv, installed_bakeoff, uv_or_skip


def test_a_run_without_the_local_extra_says_what_to_install_and_starts_no_job(bakeoff_wheel, tmp_path):
    # The core only (its dependencies from the index, as `pip install bakeoff` would): no torch, no torch_xla.
    bin_dir = fresh_venv(tmp_path / "venv", str(bakeoff_wheel))
    bakeoff = installed_bakeoff(bin_dir, tmp_path, timeout=300)
    out = tmp_path / "run"
    proc = bakeoff("run", ROOT / "examples" / "quickstart.yaml", "--out", out, "--no-mlflow")
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.startswith("bakeoff: error:")]
    assert len(lines) == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    python = bin_dir / "python"
    assert "lacks torch and torch_xla" in lines[0] and "no job was started" in lines[0], lines[0]
    # The exact command that installs what is missing, for the Python the jobs run.
    # A venv made by uv has no pip: the line says the install that works there.
    assert f"`uv pip install --python {python} 'bakeoff[local]'`" in lines[0], lines[0]
    assert not (out / "jobs").exists() or not any((out / "jobs").iterdir())
    # With pip in that Python (a venv made by `python -m venv`), the line is pip's.
    subprocess.run([uv_or_skip(), "pip", "install", "--quiet", "--python", str(python), "pip"], check=True,
                   timeout=300)
    again = bakeoff("run", ROOT / "examples" / "quickstart.yaml", "--out", out, "--no-mlflow")
    assert again.returncode == 2, again.stderr[-2000:]
    assert f"`{python} -m pip install 'bakeoff[local]'`" in again.stderr, again.stderr[-2000:]
