"""The evaluation step at scale: wall time and peak memory against runs and logged steps.

    .venv/bin/python benchmarks/evaluation_scale.py

Writes synthetic job outputs (summary.json + metrics.jsonl with a train record per step and
a validation record every 100 steps), then times `evaluate.py` on them in a fresh process
and reads its peak RSS. Goal: 100 runs x 10k logged steps in under 2 s and under 200 MB,
growing with runs and not with steps (the baselines, 10x fewer steps or half the runs, are
measured in the same run: the machines are shared and noisy).
"""
from __future__ import annotations

import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EVALUATE = ROOT / "entrypoints" / "evaluate.py"


def write_jobs(root: Path, runs: int, steps: int) -> dict:
    rng = random.Random(0)
    legs = {"trn1": {"instance_type": "ml.trn1.32xlarge", "instance_count": 1, "backend": "neuron", "seeds": [],
                     "price": {"usd_per_hour": 21.5, "source": "bench", "as_of": "2026-12-02"}},
            "p4d": {"instance_type": "ml.p4d.24xlarge", "instance_count": 1, "backend": "cuda", "seeds": [],
                    "price": {"usd_per_hour": 37.7, "source": "bench", "as_of": "2026-12-02"}}}
    for i in range(runs):
        leg = "trn1" if i % 2 else "p4d"
        seed = i // 2
        legs[leg]["seeds"].append(seed)
        model = root / f"{leg}-s{seed}" / "opt" / "ml" / "model"
        model.mkdir(parents=True)
        with open(model / "metrics.jsonl", "w") as fh:
            for step in range(steps):
                fh.write(json.dumps({"kind": "train", "step": step, "time_s": step * 0.1,
                                     "train_loss": 5.0 / (1 + step / 100) + rng.random() * 0.01,
                                     "tokens_per_sec": 1e5 + rng.random(), "step_time_s": 0.02, "lr": 1e-3}) + "\n")
                if step % 100 == 99:
                    fh.write(json.dumps({"kind": "eval", "step": step + 1, "time_s": step * 0.1,
                                         "val_loss": 5.0 / (1 + step / 100)}) + "\n")
        (model / "summary.json").write_text(json.dumps({
            "leg": leg, "seed": seed, "status": "completed", "metrics": {"val_loss": 2.4 + rng.random() * 0.01},
            "throughput": {"unit": "tokens", "tokens_per_sec": 1e5, "units_processed": 1e6},
            "wall_time_s": steps * 0.1, "training_time_s": steps * 0.1}))
    return {"bakeoff": "scale", "spec_hash": "x", "legs": legs, "cost_basis": "bench", "mlflow": {},
            "parity": {"metric": "val_loss", "direction": "minimize", "margin": 0.05, "margin_type": "absolute",
                       "alpha": 0.05, "baseline": "p4d", "test": "equivalence", "power": 0.8}}


def measure(runs: int, steps: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        jobs = Path(tmp) / "jobs"
        config = write_jobs(jobs, runs, steps)
        (Path(tmp) / "config.json").write_text(json.dumps(config))
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, str(EVALUATE), "--jobs", str(jobs), "--config",
                               str(Path(tmp) / "config.json"), "--out", str(Path(tmp) / "out")],
                              capture_output=True, text=True)
        wall = time.perf_counter() - start
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        if proc.returncode != 0:
            raise SystemExit(proc.stderr)
        # ru_maxrss of children is the largest of any child so far: measure the big cases last.
        return {"runs": runs, "steps": steps, "wall_s": round(wall, 3), "peak_mb": round(max(peak_kib, before) / 1024)}


def main() -> int:
    # An import-only baseline: what the interpreter, numpy and scipy cost before any job is read.
    results = [measure(2, 10), measure(100, 1_000), measure(50, 10_000), measure(100, 10_000)]
    for r in results:
        print(f"{r['runs']:4} runs x {r['steps']:6} steps: {r['wall_s']:6.2f} s, peak {r['peak_mb']:4} MB")
    small, steps_1k, half, full = results
    per_steps = (full["wall_s"] - small["wall_s"]) / max(1e-6, steps_1k["wall_s"] - small["wall_s"])
    per_runs = (full["wall_s"] - small["wall_s"]) / max(1e-6, half["wall_s"] - small["wall_s"])
    met = full["wall_s"] < 2.0 and full["peak_mb"] < 200
    print(json.dumps({"benchmark": "evaluation_scale", "goal": "100 x 10k steps < 2 s and < 200 MB",
                      "met": met, "time_x10_steps_over_x1": round(per_steps, 2),
                      "time_x2_runs_over_x1": round(per_runs, 2), "results": results}, indent=2))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
