"""Telemetry overhead: the same training loop with and without bakeoff's telemetry.

Both variants run in this one process, interleaved round by round so machine
noise hits them alike; the figure is the ratio of median step times.
Goal: overhead under 1% of step time.

    .venv/bin/python benchmarks/telemetry_overhead.py [--steps 60] [--rounds 5]
"""
from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "entrypoints"))

import torch  # noqa: E402

from bakeoff_runtime.contract import ENV, TrainingEnv  # noqa: E402
from bakeoff_runtime.training.reference.model import LMConfig, TinyLM  # noqa: E402
from bakeoff_runtime.training.runtime import Runtime  # noqa: E402


def make_runtime(tmp: Path, steps: int, mlflow: bool) -> Runtime:
    env = TrainingEnv(model_dir=tmp / "model", output_dir=tmp / "out", output_data_dir=tmp / "out" / "data",
                      input_dir=tmp / "in", input_config_dir=tmp / "in" / "config", checkpoint_dir=tmp / "ck",
                      hyperparameters={"seed": 0, "leg": "bench", "max_steps": steps, "log_interval": 10})
    environ = {ENV["backend"]: "cpu", ENV["precision"]: "fp32"}
    if mlflow:
        environ.update({"MLFLOW_TRACKING_URI": f"sqlite:///{tmp / 'mlflow.db'}", ENV["mlflow_experiment"]: "bench"})
    rt = Runtime(env, environ=environ)
    rt.telemetry.stdout = io.StringIO()  # the line is formatted and written; a terminal is not measured
    return rt


def loop(steps: int, rt: Runtime | None) -> float:
    torch.manual_seed(0)
    cfg = LMConfig(sequence_length=64, d_model=64, n_layers=2, n_heads=4)
    model = TinyLM(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randint(0, 256, (16, 64))
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        _, loss = model(x, x)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if rt is not None:
            rt.track_step(step, loss, tokens=x.numel())
        times.append(time.perf_counter() - t0)
    return statistics.median(times[5:])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--mlflow", action="store_true", help="also run the MLflow sink (sqlite store)")
    args = ap.parse_args()
    torch.set_num_threads(max(1, (os.cpu_count() or 2) // 2))
    plain, telem = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            plain.append(loop(args.steps, None))
            rt = make_runtime(Path(tmp) / f"r{r}", args.steps, args.mlflow)
            telem.append(loop(args.steps, rt))
            rt.finish()
    base, with_t = statistics.median(plain), statistics.median(telem)
    overhead = (with_t - base) / base
    print(json.dumps({"benchmark": "telemetry_overhead", "median_step_s_without": base,
                      "median_step_s_with": with_t, "overhead_ratio": overhead, "goal": "< 0.01",
                      "met": overhead < 0.01, "rounds": args.rounds, "steps": args.steps, "mlflow": args.mlflow},
                     indent=2))


if __name__ == "__main__":
    main()
