"""benchmarks/device_check.py: the GPU check's dry run, its no-GPU refusal, its arithmetic, and its
checks on a real run (here, where the cuda leg falls back to the CPU, the CUDA check must fail)."""
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import device_check  # noqa: E402

SCRIPT = ROOT / "benchmarks" / "device_check.py"


def _check(out_dir, *args):
    return subprocess.run([sys.executable, str(SCRIPT), "--out", str(out_dir), *args], capture_output=True, text=True,
                          timeout=120)


def test_the_dry_run_says_what_it_would_run_and_its_spec_is_valid(tmp_path, cli):
    proc = _check(tmp_path, "--dry-run", "--steps", "40")
    assert proc.returncode == 0, proc.stderr
    assert f"would run: {sys.executable.rsplit('/', 1)[0]}/bakeoff run {tmp_path / 'device-check.yaml'}" in proc.stdout
    assert "would check: the gpu leg on CUDA; inductor cache cold on seed 0, warm after" in proc.stdout
    spec = yaml.safe_load((tmp_path / "device-check.yaml").read_text())
    gpu = next(leg for leg in spec["legs"] if leg["name"] == "gpu")
    assert gpu["backend"] == "cuda" and gpu["precision"] == "bf16" and gpu["compile"] == "torch_compile"
    assert spec["training"]["max_steps"] == 40 and spec["parity"]["baseline"] == "cpu"
    assert cli("validate", tmp_path / "device-check.yaml").returncode == 0
    assert not (tmp_path / "run").exists(), "a dry run ran something"


@pytest.mark.skipif(device_check.gpu_name() is not None, reason="this machine has a GPU")
def test_without_a_gpu_it_refuses_in_one_line(tmp_path):
    proc = _check(tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--dry-run" in proc.stderr, proc.stderr
    assert not (tmp_path / "run").exists()
    assert _check(tmp_path, "--steps", "5").returncode == 2


def test_mfu_is_model_flops_over_the_published_peak():
    per_token = device_check.flops_per_token(1_000_000, n_layers=4, d_model=256, sequence_length=128)
    assert per_token == 6e6 + 12 * 4 * 256 * 128
    assert device_check.mfu(100_000, per_token, 989.4) == pytest.approx(100_000 * per_token / 989.4e12)
    assert device_check.peak_for("NVIDIA H200") == 989.4 and device_check.peak_for("NVIDIA A100-SXM4-80GB") == 312.0
    assert device_check.peak_for("NVIDIA H100 PCIe") is None and device_check.peak_for("Tesla T4") is None
