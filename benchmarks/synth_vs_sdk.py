"""`bakeoff synth` of 2 legs x 10 seeds, whole process, against building the same
training steps with the SageMaker Python SDK 3.x under moto, in the same run.
Goal: bakeoff at least 5x faster, and under 1 s.

    .venv/bin/python benchmarks/synth_vs_sdk.py [--repeat 5]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "examples" / "quickstart.yaml"


def timed(cmd: list[str], repeat: int) -> tuple[float, list[float]]:
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples), samples


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seeds", type=int, default=10)
    args = ap.parse_args()
    exe = str(Path(sys.executable).with_name("bakeoff"))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "definition.json"
        ours, ours_s = timed([exe, "synth", str(SPEC), "--set", f"seeds={args.seeds}", "-o", str(out)], args.repeat)
        steps = sum(1 for s in json.loads(out.read_text())["Steps"] if s["Type"] == "Training")
        sdk, sdk_s = timed([sys.executable, str(ROOT / "benchmarks" / "sdk_build.py"), str(SPEC),
                            "--set", f"seeds={args.seeds}", "-o", str(Path(tmp) / "sdk.json")],
                           max(1, args.repeat // 2))
    print(json.dumps({"benchmark": "synth_vs_sdk", "training_steps": steps, "bakeoff_synth_s": ours,
                      "sdk_under_moto_s": sdk, "speedup": sdk / ours, "goal": ">= 5x and < 1 s",
                      "met": sdk / ours >= 5 and ours < 1.0, "bakeoff_samples_s": ours_s, "sdk_samples_s": sdk_s},
                     indent=2))


if __name__ == "__main__":
    main()
