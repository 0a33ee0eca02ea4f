"""The evaluation step on fixed summaries: known numbers in, known verdicts out."""
import json
import subprocess
import sys

import pytest

from bakeoff_runtime.evaluation import evaluate, load_jobs
from conftest import ENTRYPOINTS

CONFIG = {
    "bakeoff": "fixed", "spec_hash": "abc",
    "parity": {"metric": "val_loss", "direction": "minimize", "margin": 0.05, "margin_type": "absolute",
               "alpha": 0.05, "baseline": "gpu"},
    "legs": {
        "trn": {"instance_type": "ml.trn1.32xlarge", "instance_count": 1, "backend": "neuron", "seeds": [0, 1, 2],
                "price": {"usd_per_hour": 36.0, "source": "test", "as_of": "today"}},
        "gpu": {"instance_type": "ml.p4d.24xlarge", "instance_count": 2, "backend": "cuda", "seeds": [0, 1, 2],
                "price": {"usd_per_hour": 18.0, "source": "test", "as_of": "today"}},
    },
}


def _job(tmp, name, leg, seed, val, status="completed", billable=100.0, reason=None):
    d = tmp / name / "opt" / "ml" / "model"
    d.mkdir(parents=True)
    summary = {"leg": leg, "seed": seed, "status": status, "reason": reason, "metrics": {"val_loss": val},
               "throughput": {"unit": "tokens", "tokens_per_sec": 1000.0 * (seed + 1), "units_processed": 2e6},
               "time_to_first_step_s": 10.0, "compile": {"compile_time_s": 4.0, "compiled_graphs": 2},
               "wall_time_s": 99.0, "peak_host_memory_bytes": 1000 + seed}
    (d / "summary.json").write_text(json.dumps(summary))
    (tmp / name / "job.json").write_text(json.dumps({"billable_s": billable, "leg": leg, "seed": seed}))


def _jobs(tmp, trn_vals, gpu_vals):
    for i, v in enumerate(trn_vals):
        _job(tmp, f"trn-s{i}", "trn", i, v)
    for i, v in enumerate(gpu_vals):
        _job(tmp, f"gpu-s{i}", "gpu", i, v)
    return load_jobs(tmp)


def test_pass_with_figures_and_cost(tmp_path):
    ev = evaluate(CONFIG, _jobs(tmp_path, [2.40, 2.41, 2.42], [2.41, 2.40, 2.42]))
    assert ev["verdict"] == "pass"
    trn = ev["legs"]["trn"]
    assert trn["metric"]["mean"] == pytest.approx(2.41)
    assert trn["throughput_mean"] == pytest.approx(2000.0)
    # 100 billable seconds x 1 instance x $36/h = $1; gpu: 100 s x 2 instances x $18/h = $1.
    assert trn["cost_per_run_usd_mean"] == pytest.approx(1.0)
    assert ev["legs"]["gpu"]["cost_per_run_usd_mean"] == pytest.approx(1.0)
    assert trn["cost_per_million_units_usd_mean"] == pytest.approx(0.5)
    assert trn["peak_host_memory_bytes_max"] == 1002
    names = [c["name"] for c in ev["checks"]]
    assert names == ["stability:trn", "stability:gpu", "parity:trn~gpu"]
    assert ev["failed_checks"] == "none"


def test_fail_when_not_equivalent(tmp_path):
    ev = evaluate(CONFIG, _jobs(tmp_path, [2.60, 2.61, 2.62], [2.41, 2.40, 2.42]))
    assert ev["verdict"] == "fail"
    check = ev["checks"][-1]
    assert check["status"] == "failed" and "not shown equivalent" in check["why"]
    assert ev["failed_checks"] == "parity:trn~gpu"


def test_insufficient_replicates_is_inconclusive_never_a_pass(tmp_path):
    cfg = json.loads(json.dumps(CONFIG))
    cfg["legs"]["trn"]["seeds"] = [0]
    cfg["legs"]["gpu"]["seeds"] = [0]
    ev = evaluate(cfg, _jobs(tmp_path, [2.41], [2.41]))
    assert ev["verdict"] == "inconclusive"
    assert ev["checks"][-1]["status"] == "insufficient_replicates"
    assert "nothing can be concluded" in ev["checks"][-1]["why"]


def test_failed_and_missing_jobs_are_reported_with_reasons(tmp_path):
    _job(tmp_path, "trn-s0", "trn", 0, 2.41)
    _job(tmp_path, "trn-s1", "trn", 1, None, status="failed", reason="RuntimeError: compiler crashed")
    for i in range(3):
        _job(tmp_path, f"gpu-s{i}", "gpu", i, 2.41 + i / 100)
    ev = evaluate(CONFIG, load_jobs(tmp_path))
    assert ev["verdict"] == "fail"
    stab = next(c for c in ev["checks"] if c["name"] == "stability:trn")
    assert "seed 1 failed: RuntimeError: compiler crashed" in stab["why"]
    assert "seed 2 failed: no output from this job" in stab["why"]
    assert ev["legs"]["trn"]["failed"] == 2
    assert ev["checks"][-1]["status"] == "insufficient_replicates"


def test_relative_margin(tmp_path):
    cfg = json.loads(json.dumps(CONFIG))
    cfg["parity"].update(margin=0.01, margin_type="relative")  # 1% of ~2.41
    ev = evaluate(cfg, _jobs(tmp_path, [2.40, 2.41, 2.42], [2.41, 2.40, 2.42]))
    assert ev["checks"][-1]["margin"] == pytest.approx(0.0241)


def test_evaluate_script_reads_model_tarballs(tmp_path):
    """In SageMaker the processing step gets each job's model.tar.gz, not a directory."""
    import tarfile

    src = tmp_path / "src"
    _jobs(src, [2.40, 2.41, 2.42], [2.41, 2.40, 2.42])
    jobs = tmp_path / "jobs"
    for job in src.iterdir():
        (jobs / job.name).mkdir(parents=True)
        with tarfile.open(jobs / job.name / "model.tar.gz", "w:gz") as tar:
            tar.add(job / "opt" / "ml" / "model" / "summary.json", arcname="summary.json")
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(CONFIG))
    out = tmp_path / "eval"
    proc = subprocess.run([sys.executable, str(ENTRYPOINTS / "evaluate.py"), "--jobs", str(jobs), "--config",
                           str(cfg), "--out", str(out), "--margin", "0.001"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    ev = json.loads((out / "evaluation.json").read_text())
    assert ev["legs"]["trn"]["completed"] == 3
    assert ev["parity"]["margin"] == 0.001 and ev["verdict"] == "fail"
    assert "verdict=fail" in proc.stdout
