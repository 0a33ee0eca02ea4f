"""`bakeoff --help` wall time, against a bare `python -c pass` in the same run.

Goal: under 0.5 s (the CLI imports nothing heavy at start-up).

    .venv/bin/python benchmarks/cli_startup.py [--repeat 10]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path


def timed(cmd: list[str], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    exe = str(Path(sys.executable).with_name("bakeoff"))
    python = timed([sys.executable, "-c", "pass"], args.repeat)
    help_s = timed([exe, "--help"], args.repeat)
    imports = subprocess.run([sys.executable, "-X", "importtime", "-c", "import bakeoff.pipelines.cli.main"],
                             capture_output=True, text=True).stderr
    heavy = sorted({line.split("|")[-1].strip().split(".")[0] for line in imports.splitlines()
                    if any(h in line for h in ("torch", "boto", "sagemaker", "mlflow", "pydantic", "rich"))})
    print(json.dumps({"benchmark": "cli_startup", "bakeoff_help_s": help_s, "python_noop_s": python,
                      "ratio_to_python": help_s / python, "goal_s": 0.5, "met": help_s < 0.5,
                      "heavy_modules_imported_at_startup": heavy}, indent=2))


if __name__ == "__main__":
    main()
