"""Fixed job outputs for the evaluation step (two legs, trn and gpu, their prices) and the evaluation config;
used by tests/unit/test_evaluation.py and by the tests that need a real evaluation of known numbers."""
import json

from jobtree import seal, trained_on

from bakeoff_runtime.verdict.job_outputs import load_jobs

CONFIG = {
    "bakeoff": "fixed", "spec_hash": "abc",
    "parity": {"metric": "val_loss", "direction": "minimize", "margin": 0.05, "margin_type": "absolute",
               "alpha": 0.05, "baseline": "gpu", "test": "equivalence", "power": 0.8},
    "legs": {
        "trn": {"instance_type": "ml.trn1.32xlarge", "instance_count": 1, "backend": "neuron", "seeds": [0, 1, 2],
                "price": {"usd_per_hour": 36.0, "source": "test", "as_of": "today"}},
        "gpu": {"instance_type": "ml.p4d.24xlarge", "instance_count": 2, "backend": "cuda", "seeds": [0, 1, 2],
                "price": {"usd_per_hour": 18.0, "source": "test", "as_of": "today"}},
    },
}


def _trained_on(leg):
    """What a job on each leg's own hardware records of where it trained (the backend check's evidence)."""
    return trained_on("cuda" if leg == "gpu" else "xla")


def _job(tmp, name, leg, seed, val, status="completed", billable=100.0, reason=None, meta=None, evals=(),
         failure_kind=None, throughput=None):
    d = tmp / name / "opt" / "ml" / "model"
    d.mkdir(parents=True)
    summary = {"leg": leg, "seed": seed, "status": status, "reason": reason, "metrics": {"val_loss": val},
               "throughput": {"unit": "tokens", "tokens_per_sec": throughput or 2000.0 + seed,
                              "overall_per_sec": throughput or 2000.0 + seed, "units_processed": 2e6},
               "time_to_first_step_s": 10.0, "compile": {"compile_time_s": 4.0, "compiled_graphs": 2},
               "wall_time_s": 99.0, "peak_host_memory_bytes": 1000 + seed, **_trained_on(leg)}
    if failure_kind:
        summary["failure_kind"] = failure_kind
    (d / "summary.json").write_text(json.dumps(summary))
    lines = [{"kind": "train", "step": i, "time_s": i, "train_loss": 3.0 - i / 100} for i in range(0, 100, 10)]
    lines += [{"kind": "eval", "step": s, "time_s": t, "val_loss": v} for s, t, v in evals]
    (d / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    seal(d)
    (tmp / name / "job.json").write_text(json.dumps({"billable_s": billable, "leg": leg, "seed": seed, **(meta or {})}))


def _jobs(tmp, trn_vals, gpu_vals):
    for i, v in enumerate(trn_vals):
        _job(tmp, f"trn-s{i}", "trn", i, v)
    for i, v in enumerate(gpu_vals):
        _job(tmp, f"gpu-s{i}", "gpu", i, v)
    return load_jobs(tmp)
