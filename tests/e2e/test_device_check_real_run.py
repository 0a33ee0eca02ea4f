"""benchmarks/device_check.py's checks on a real run: where the cuda leg falls back to the CPU,
the CUDA check must fail."""
import json
import sys

import pytest
from shared_runs import shared_device_check_run  # noqa: F401  (the fixture `device_check_run`: one real run per invocation)

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import device_check  # noqa: E402


def test_its_checks_read_a_real_run_and_fail_a_gpu_leg_that_ran_on_the_cpu(device_check_run):
    out = device_check_run["out"]
    assert (out / "evaluation" / "evaluation.json").exists(), device_check_run["proc"].stderr[-3000:]
    report = device_check.examine(out, peak=989.4)
    checks = {c["name"]: c for c in report["checks"]}
    if device_check.gpu_name() is None:
        assert not checks["gpu leg on CUDA"]["passed"] and "seed 0: cpu on cpu" in checks["gpu leg on CUDA"]["why"]
        assert not report["passed"]
    assert [r["seed"] for r in report["gpu_jobs"]] == [0, 1]  # every seed the spec asks for
    assert checks["inductor cache cold then warm"]["passed"], checks["inductor cache cold then warm"]["why"]
    assert "per-seed val_loss differences" in checks["numerics match the CPU within the margin"]["why"]
    row = report["gpu_jobs"][1]
    assert row["flops_per_token"] == device_check.flops_per_token(row["parameters"], 1, 32, 32)
    assert row["mfu"] == pytest.approx(row["tokens_per_sec"] * row["flops_per_token"] / 989.4e12)
    json.dumps(report)  # what device_check.json holds
