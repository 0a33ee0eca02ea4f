"""Job outputs whose summaries say which backend and model each job trained, evaluated: the inputs of the
validity checks (tests/unit/test_validity.py, test_mlflow_parent_faults.py)."""
import json

from jobtree import seal

from bakeoff_runtime.verdict.evaluation import evaluate
from bakeoff_runtime.verdict.job_outputs import load_jobs

CONFIG = {
    "bakeoff": "validity", "spec_hash": "abc",
    "parity": {"metric": "val_loss", "direction": "minimize", "margin": 0.05, "margin_type": "absolute",
               "alpha": 0.05, "baseline": "gpu", "test": "equivalence", "power": 0.8},
    "legs": {
        "trn": {"instance_type": "ml.trn1.32xlarge", "instance_count": 1, "backend": "neuron", "seeds": [0, 1, 2]},
        "gpu": {"instance_type": "ml.p4d.24xlarge", "instance_count": 1, "backend": "cuda", "seeds": [0, 1, 2]},
    },
}

TIED = {"parameters": 1000, "tensors": 3, "shapes": {"256x4": 1, "4": 1, "4x4": 1}}


def _job(tmp, leg, seed, val, *, devices, model=TIED, graphs=3, memory=None, first=5.5, status="completed",
         reason=None, kind=None, **extra):
    d = tmp / f"{leg}-s{seed}" / "opt" / "ml" / "model"
    d.mkdir(parents=True)
    summary = {"leg": leg, "seed": seed, "status": status, "reason": reason, "metrics": {"val_loss": val},
               "throughput": {"unit": "tokens", "tokens_per_sec": 1000.0, "units_processed": 1e5},
               "compile": {"compiled_graphs": graphs, "compile_time_s": 1.0, **extra.pop("compile", {})},
               "peak_device_memory_bytes": memory, "first_train_loss": first,
               "model": {**model, "devices": devices} if devices else None, "wall_time_s": 10.0, **extra}
    if kind:
        summary["failure_kind"] = kind
    (d / "summary.json").write_text(json.dumps(summary))
    (d / "metrics.jsonl").write_text("")
    seal(d)


def _bakeoff(tmp, trn=None, gpu=None, vals=((2.40, 2.41), (2.51, 2.50), (2.32, 2.32))):
    for seed, (t, g) in enumerate(vals):
        _job(tmp, "trn", seed, t, **{"devices": {"xla": 3}, **(trn or {})})
        _job(tmp, "gpu", seed, g, **{"devices": {"cuda": 3}, "graphs": None, "memory": 2**30, **(gpu or {})})
    return evaluate(CONFIG, load_jobs(tmp))
