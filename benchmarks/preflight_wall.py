"""`bakeoff preflight` wall time on the quickstart model, whole process, against a
bare `python -c "import torch_xla"` in the same run (the floor any XLA check pays).
Goal: under 60 s on 2 cores.

    .venv/bin/python benchmarks/preflight_wall.py
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(cmd, **kw) -> tuple[float, int]:
    t0 = time.perf_counter()
    rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw).returncode
    return time.perf_counter() - t0, rc


def main() -> None:
    exe = str(Path(sys.executable).with_name("bakeoff"))
    floor, _ = timed([sys.executable, "-c", "import torch_xla"], env={**os.environ, "PJRT_DEVICE": "CPU"})
    wall, rc = timed([exe, "preflight", str(ROOT / "examples" / "quickstart.yaml")])
    print(json.dumps({"benchmark": "preflight_wall", "preflight_s": wall, "exit_code": rc,
                      "import_torch_xla_s": floor, "ratio_to_import": wall / floor, "goal_s": 60, "met": wall < 60},
                     indent=2))


if __name__ == "__main__":
    main()
