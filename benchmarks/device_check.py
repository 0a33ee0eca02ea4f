"""The GPU check, ready for a machine with an NVIDIA GPU: one bake-off whose GPU leg really runs on CUDA.

    .venv/bin/python benchmarks/device_check.py [--out DIR] [--steps N] [--peak-tflops X]
    .venv/bin/python benchmarks/device_check.py --dry-run     # anywhere: what it would run and check

It writes a spec (the built-in reference LM, 3 seeds) with two legs: `gpu` (ml.g5.xlarge, CUDA,
bf16 autocast, `compile: torch_compile`) and the baseline `cpu` (ml.m5.xlarge, bf16 on the CPU),
runs it with `bakeoff run` (the local engine puts a cuda leg on the GPU when `nvidia-smi` and
/dev/nvidia0 exist), and reads the jobs' summaries and the verdict. It checks, and exits 1 when
one fails:

* the GPU leg trained on CUDA (each job's `environment.backend_device`);
* the inductor cache: the first GPU job compiles cold, the later ones start warm from it
  (`compile.cache.state`), and says what the warm start saved in time to first step;
* the numerics: the verdict's paired difference of val_loss, GPU minus CPU, lies within the
  margin (0.1) on every seed, and the verdict is not `fail`.

It records, per GPU job: peak device memory, tokens per second, time to first step, and MFU:
model FLOPs per token (6 N + 12 L d T: the dense matmuls forward and backward, plus attention
scores, as in PaLM's appendix B) times tokens per second, over the GPU's published dense bf16
peak (PEAK_BF16_TFLOPS, or --peak-tflops). Everything goes to DIR/device_check.json. Exit 2:
bad input or no GPU without --dry-run.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

# Dense (no sparsity) bf16 tensor-core peaks, by the name nvidia-smi prints; a GPU not listed
# needs --peak-tflops. Sources:
# - H100 SXM5: 989.4 TFLOPS bf16 matrix (glennklockwood.com/garden/processors/h100, from NVIDIA's
#   Hopper whitepaper); H200 is the same GH100 SXM part with HBM3e (the same page).
# - A100 (SXM4, 40 and 80 GB): 312 TFLOPS bf16 dense (glennklockwood.com/garden/processors/A100, from
#   NVIDIA's A100 datasheet).
# The PCIe H100 runs at lower clocks and is not listed.
PEAK_BF16_TFLOPS = {"H200": 989.4, "H100 80GB HBM3": 989.4, "H100 SXM": 989.4, "A100": 312.0}

MARGIN = 0.1
MODEL = {"d_model": 256, "n_layers": 4, "n_heads": 8}
SEQUENCE_LENGTH = 128


def spec(steps: int, model: dict[str, int] | None = None, sequence_length: int = SEQUENCE_LENGTH,
         seeds: int = 3) -> dict[str, Any]:
    """The check's bake-off. main() runs 3 seeds; a test may run fewer, down to 2, which the inductor cache
    check needs (a cold first GPU job, a warm one after it)."""
    return {
        "name": "device-check",
        "description": f"The GPU leg on CUDA (bf16, torch.compile) against the CPU, {seeds} seeds.",
        "model": dict(model or MODEL),
        "training": {"global_batch_size": 32, "sequence_length": sequence_length, "max_steps": steps,
                     "eval_interval": max(1, steps // 4), "optimizer": {"lr": 0.003, "warmup_steps": 15}},
        "legs": [{"name": "gpu", "instance_type": "ml.g5.xlarge", "backend": "cuda", "precision": "bf16",
                  "compile": "torch_compile"},
                 {"name": "cpu", "instance_type": "ml.m5.xlarge", "precision": "bf16"}],
        "seeds": seeds,
        "parity": {"metric": "val_loss", "direction": "minimize", "margin": MARGIN, "baseline": "cpu"},
    }


def flops_per_token(parameters: int, n_layers: int, d_model: int, sequence_length: int) -> float:
    """Training FLOPs per token of a decoder LM: 6 N for the weights' matmuls (forward and backward)
    plus 12 L d T for the attention scores and their use (PaLM, Chowdhery et al. 2022, appendix B)."""
    return 6.0 * parameters + 12.0 * n_layers * d_model * sequence_length


def mfu(tokens_per_sec: float, per_token: float, peak_tflops: float) -> float:
    return tokens_per_sec * per_token / (peak_tflops * 1e12)


def peak_for(gpu_name: str) -> float | None:
    for key, tflops in PEAK_BF16_TFLOPS.items():
        if key in gpu_name and "PCIe" not in gpu_name:
            return tflops
    return None


def gpu_name() -> str | None:
    """The first GPU's name from nvidia-smi, or None when this machine has no NVIDIA GPU."""
    if not shutil.which("nvidia-smi") or not Path("/dev/nvidia0").exists():
        return None
    out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True)
    names = [line.strip() for line in out.stdout.splitlines() if line.strip()]
    return names[0] if out.returncode == 0 and names else None


def _bakeoff() -> str:
    exe = Path(sys.executable).with_name("bakeoff")
    return str(exe) if exe.exists() else "bakeoff"


def _summaries(out: Path, leg: str) -> list[dict[str, Any]]:
    rows = []
    for path in sorted((out / "jobs").glob(f"{leg}-s*/opt/ml/model/summary.json"), key=lambda p: p.parts[-5]):
        rows.append(json.loads(path.read_text()))
    return sorted(rows, key=lambda s: s.get("seed", 0))


def examine(out: Path, peak: float | None) -> dict[str, Any]:
    """The figures and checks of a finished device-check run directory."""
    ev = json.loads((out / "evaluation" / "evaluation.json").read_text())
    ran = json.loads((out / "spec.json").read_text())  # the model and sequence length the jobs trained
    model, sequence_length = ran["model"], int(ran["training"]["sequence_length"])
    gpu = _summaries(out, "gpu")
    rows, checks = [], []
    for s in gpu:
        per_token = flops_per_token(int(s.get("parameters") or 0), int(model["n_layers"]), int(model["d_model"]),
                                    sequence_length)
        tps = float((s.get("throughput") or {}).get("tokens_per_sec") or 0.0)
        cache = ((s.get("compile") or {}).get("cache") or {})
        rows.append({"seed": s.get("seed"), "device": (s.get("environment") or {}).get("backend_device"),
                     "status": s.get("status"), "tokens_per_sec": tps,
                     "peak_device_memory_bytes": s.get("peak_device_memory_bytes"),
                     "time_to_first_step_s": s.get("time_to_first_step_s"), "cache_state": cache.get("state"),
                     "parameters": int(s.get("parameters") or 0), "flops_per_token": per_token,
                     "mfu": mfu(tps, per_token, peak) if peak and tps else None})
    on_cuda = bool(rows) and all(str(r["device"] or "").startswith("cuda") for r in rows)
    checks.append({"name": "gpu leg on CUDA", "passed": on_cuda,
                   "why": ", ".join(f"seed {r['seed']}: {r['device']}" for r in rows) or "no GPU job summary"})
    states = [r["cache_state"] for r in rows]
    warm = len(states) >= 2 and states[0] == "cold" and all(s == "warm" for s in states[1:])
    first = [r["time_to_first_step_s"] for r in rows]
    saved = (f"; time to first step {first[0]:.1f} s cold, {min(first[1:]):.1f} s warm"
             if warm and all(isinstance(x, (int, float)) for x in first) else "")
    checks.append({"name": "inductor cache cold then warm", "passed": warm,
                   "why": f"cache state by seed: {states}{saved}"})
    parity = next((c for c in ev.get("checks", []) if c["name"] == "parity:gpu~cpu"), {})
    diffs = [d for _, d in parity.get("per_seed_diffs") or []]
    close = bool(diffs) and all(abs(d) < MARGIN for d in diffs) and ev.get("verdict") != "fail"
    checks.append({"name": "numerics match the CPU within the margin", "passed": close,
                   "why": f"per-seed val_loss differences {[round(d, 4) for d in diffs]} (margin {MARGIN}); "
                          f"verdict {ev.get('verdict')}: {parity.get('why', '')}"})
    return {"verdict": ev.get("verdict"), "gpu_jobs": rows, "checks": checks,
            "passed": all(c["passed"] for c in checks)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="device-check-out", help="where the spec, the run and device_check.json go")
    ap.add_argument("--steps", type=int, default=300, help="training steps per job")
    ap.add_argument("--peak-tflops", type=float, help="the GPU's dense bf16 peak, for a GPU not in the table")
    ap.add_argument("--dry-run", action="store_true", help="say what it would run and check; needs no GPU")
    args = ap.parse_args(argv)
    if args.steps < 20:
        print("device_check: --steps must be at least 20 (the first steps are warm-up)", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import yaml

    spec_path = out / "device-check.yaml"
    spec_path.write_text(yaml.safe_dump(spec(args.steps), sort_keys=False))
    name = gpu_name()
    peak = args.peak_tflops or (peak_for(name) if name else None)
    command = [_bakeoff(), "run", str(spec_path), "--out", str(out / "run"), "--no-mlflow"]
    if args.dry_run:
        print(f"device_check (dry run): GPU here: {name or 'none'}; dense bf16 peak: "
              f"{f'{peak:g} TFLOPS' if peak else 'unknown (pass --peak-tflops)'}")
        print(f"would run: {' '.join(command)}")
        print(f"  spec {spec_path}: legs gpu (CUDA, bf16, torch.compile) and cpu (baseline), 3 seeds, "
              f"{args.steps} steps")
        print("would check: the gpu leg on CUDA; inductor cache cold on seed 0, warm after; per-seed val_loss "
              f"within {MARGIN} of the CPU's and a verdict that is not fail")
        print(f"would record: peak device memory, tokens/s, time to first step and MFU per GPU job in "
              f"{out / 'device_check.json'}")
        return 0
    if name is None:
        print("device_check: no NVIDIA GPU here (nvidia-smi or /dev/nvidia0 missing); run with --dry-run to see "
              "what it would do", file=sys.stderr)
        return 2
    started = time.perf_counter()
    proc = subprocess.run(command)
    if not (out / "run" / "evaluation" / "evaluation.json").exists():
        print(f"device_check: the bake-off gave no verdict (exit {proc.returncode})", file=sys.stderr)
        return 1
    report = {"gpu": name, "peak_bf16_tflops": peak, "wall_s": time.perf_counter() - started,
              **examine(out / "run", peak)}
    (out / "device_check.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    for row in report["gpu_jobs"]:
        memory = row["peak_device_memory_bytes"]
        print(f"seed {row['seed']}: {row['device']}, {row['tokens_per_sec']:.0f} tokens/s, "
              f"MFU {row['mfu']:.2%}" if row["mfu"] is not None else f"seed {row['seed']}: {row['device']}, "
              f"{row['tokens_per_sec']:.0f} tokens/s, MFU unknown (no peak for {name})", end="")
        print(f", peak device memory {memory / 2**20:.0f} MiB" if memory else "", end="")
        print(f", time to first step {row['time_to_first_step_s']} s, cache {row['cache_state']}")
    for c in report["checks"]:
        print(f"{'ok  ' if c['passed'] else 'FAIL'} {c['name']}: {c['why']}")
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
