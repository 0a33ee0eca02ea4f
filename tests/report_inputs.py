"""Known job outputs (two legs, three seeds, curves and prices) and their evaluation config: the input of the
report tests (tests/unit/test_report.py, tests/e2e/test_report_browser.py, the `evaluation` fixture of
tests/conftest.py) and of tests/unit/test_hostile_text.py."""
import json

from jobtree import seal, trained_on

CONFIG = {
    "bakeoff": "fixed", "spec_hash": "abc123",
    "parity": {"metric": "val_loss", "direction": "minimize", "margin": 0.05, "margin_type": "absolute",
               "alpha": 0.05, "baseline": "gpu", "target": 2.5},
    "cost_basis": "SageMaker BillableTimeInSeconds x instance count x on-demand price per hour",
    "legs": {
        "trn": {"instance_type": "ml.trn1.32xlarge", "instance_count": 1, "backend": "neuron", "precision": "bf16",
                "devices": 32, "seeds": [0, 1, 2], "image": "img-trn",
                "price": {"usd_per_hour": 36.0, "source": "test", "as_of": "2026-12-01"}},
        "gpu": {"instance_type": "ml.p4d.24xlarge", "instance_count": 1, "backend": "cuda", "precision": "bf16",
                "devices": 8, "seeds": [0, 1, 2], "image": "img-gpu",
                "price": {"usd_per_hour": 18.0, "source": "test", "as_of": "2026-12-01"}},
    },
}

VALUES = {"trn": [2.40, 2.41, 2.42], "gpu": [2.41, 2.40, 2.43]}


def _write_job(root, leg, seed, final):
    d = root / f"{leg}-s{seed}" / "opt" / "ml" / "model"
    d.mkdir(parents=True)
    records = [{"kind": "train", "step": s, "time_s": 10 + s, "train_loss": 5.0 - s / 40} for s in range(0, 100, 10)]
    # validation reaches 2.5 at step 60 (time 70 s), ends at `final`
    records += [{"kind": "eval", "step": 30, "time_s": 40.0, "val_loss": 3.0},
                {"kind": "eval", "step": 60, "time_s": 70.0, "val_loss": 2.5},
                {"kind": "eval", "step": 100, "time_s": 110.0, "val_loss": final}]
    (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (d / "summary.json").write_text(json.dumps({
        "leg": leg, "seed": seed, "status": "completed", "metrics": {"val_loss": final},
        "throughput": {"unit": "tokens", "tokens_per_sec": 50_000.0 + 1000 * seed, "units_processed": 4e6},
        "time_to_first_step_s": 30.0 + seed, "first_step_s": 20.0,
        "compile": {"compile_time_s": 20.0, "cache": {"state": "cold" if seed == 0 else "warm", "hits": seed}},
        "training_time_s": 100.0, "wall_time_s": 120.0, "peak_host_memory_bytes": 2 ** 30,
        "environment": {"torch": "2.9.0", "backend_device": leg},
        # where it trained, but no device memory: the report's rows of dashes are under test
        **{k: v for k, v in trained_on("xla" if leg.startswith("trn") else "cuda").items()
           if k != "peak_device_memory_bytes"}}))
    seal(d)
    (root / f"{leg}-s{seed}" / "job.json").write_text(json.dumps({"billable_s": 3600.0}))
