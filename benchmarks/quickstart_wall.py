"""Quickstart wall time on this machine: `bakeoff run examples/quickstart.yaml` from scratch
(a fresh run directory each time), timed as a whole process, with `--jobs` at its default
(side by side) against `--jobs 1` (one after another), in the same run of this benchmark.

Goals (2 cores): the default at least 1.7x faster than `--jobs 1`, under 120 s, and the same
verdict both ways. The machine is shared and noisy, so the ratio is the figure to trust; with
`--rounds N` the two alternate N times and the medians are compared.

    .venv/bin/python benchmarks/quickstart_wall.py [--rounds N] [--only default|serial]
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
SPEEDUP_GOAL = 1.7
WALL_GOAL_S = 120.0


def one_run(jobs: int | None) -> dict:
    exe = str(Path(sys.executable).with_name("bakeoff"))
    with tempfile.TemporaryDirectory() as tmp:
        command = [exe, "run", str(ROOT / "examples" / "quickstart.yaml"), "--out", tmp]
        if jobs is not None:
            command += ["--jobs", str(jobs)]
        t0 = time.perf_counter()
        proc = subprocess.run(command, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if not (Path(tmp) / "evaluation" / "evaluation.json").exists():
            sys.exit(f"quickstart_wall: the run ended without a verdict (exit {proc.returncode}):\n"
                     f"{proc.stderr[-2000:]}")
        ev = json.loads((Path(tmp) / "evaluation" / "evaluation.json").read_text())
        plan = json.loads((Path(tmp) / "plan.json").read_text())
        jobs_wall = {p.name: json.loads((p / "job.json").read_text())["billable_s"]
                     for p in sorted((Path(tmp) / "jobs").iterdir())}
    return {"jobs_at_once": plan["local"].get("jobs_at_once", 1), "wall_s": round(wall, 1),
            "exit_code": proc.returncode, "verdict": ev["verdict"],
            "job_wall_s_sum": round(sum(jobs_wall.values()), 1), "job_wall_s": jobs_wall}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=1, help="alternate the two configurations this many times")
    ap.add_argument("--only", choices=("default", "serial"), help="time one configuration only")
    args = ap.parse_args()
    runs: dict[str, list[dict]] = {"default": [], "serial": []}
    for _ in range(args.rounds):
        for name, jobs in (("serial", 1), ("default", None)):
            if args.only in (None, name):
                runs[name].append(one_run(jobs))
    out: dict = {"benchmark": "quickstart_wall", "rounds": args.rounds, "runs": runs}
    walls = {name: statistics.median(r["wall_s"] for r in rs) for name, rs in runs.items() if rs}
    out["median_wall_s"] = walls
    if "default" in walls:
        out["wall_goal_s"] = WALL_GOAL_S
        out["wall_goal_met"] = walls["default"] < WALL_GOAL_S
    if len(walls) == 2:
        speedup = walls["serial"] / walls["default"]
        verdicts = {r["verdict"] for rs in runs.values() for r in rs}
        out.update(speedup=round(speedup, 2), speedup_goal=SPEEDUP_GOAL, speedup_goal_met=speedup >= SPEEDUP_GOAL,
                   same_verdict=len(verdicts) == 1, verdicts=sorted(verdicts))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
