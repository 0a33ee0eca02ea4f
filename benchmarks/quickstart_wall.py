"""Quickstart wall time on this machine: `bakeoff run examples/quickstart.yaml`, from
scratch (fresh run dir), timed as a whole process. Goal: under 5 minutes on 2 cores.

    .venv/bin/python benchmarks/quickstart_wall.py
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    exe = str(Path(sys.executable).with_name("bakeoff"))
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        proc = subprocess.run([exe, "run", str(ROOT / "examples" / "quickstart.yaml"), "--out", tmp],
                              capture_output=True, text=True)
        wall = time.perf_counter() - t0
        ev = json.loads((Path(tmp) / "evaluation" / "evaluation.json").read_text())
        jobs = {p.name: json.loads((p / "job.json").read_text())["billable_s"]
                for p in sorted((Path(tmp) / "jobs").iterdir())}
    print(json.dumps({"benchmark": "quickstart_wall", "wall_s": wall, "goal_s": 300, "met": wall < 300,
                      "exit_code": proc.returncode, "verdict": ev["verdict"], "job_wall_s": jobs,
                      "overhead_s": wall - sum(jobs.values())}, indent=2))


if __name__ == "__main__":
    main()
