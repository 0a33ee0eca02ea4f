"""Peak memory of a script-mode bake-off as its script prints more metric lines: flat, not growing with them.

A script that trains a few steps and then prints N metric lines (`train loss X` / `val loss X`, every line
matched by the spec's regexes, so every line becomes a metrics.jsonl record) runs through `bakeoff run`,
two legs, one seed, no MLflow. While it runs, every process of the run is sampled for its peak resident
memory (VmHWM in /proc/PID/status, the kernel's high-water mark, so a sample between two peaks loses
nothing): the job's launcher (entrypoints/launch.py, which reads the script's output), the script itself,
the Evaluate step (evaluate.py, which reads the jobs' metrics.jsonl back) and `bakeoff run`. The run is
done at the baseline's N and at the large N, in this one invocation; the figure per process is the ratio
of the two peaks (the script's own, which holds nothing, is shown beside them). Goal: every
ratio under 1.25 (flat in the number of lines; a launcher that held the
lines would be near 100x at 5 M).

    .venv/bin/python benchmarks/script_output_memory.py [--lines 5000000] [--baseline 50000]
    .venv/bin/python benchmarks/script_output_memory.py --lines 100 --baseline 10 --line-bytes 10000000
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "entrypoints"))

from bakeoff_runtime.contract import WORKER_ENV  # noqa: E402

BAKEOFF = Path(sys.executable).with_name("bakeoff")

SCRIPT = """
import argparse, sys, torch
p = argparse.ArgumentParser(); p.add_argument("--seed", type=int); p.add_argument("--lines", type=int)
p.add_argument("--pad", type=int, default=0); a = p.parse_args()
pad = " " + "x" * a.pad if a.pad else ""
m = torch.nn.Linear(4, 1); opt = torch.optim.SGD(m.parameters(), lr=0.01)
for _ in range(3):
    loss = m(torch.ones(8, 4)).pow(2).mean(); opt.zero_grad(); loss.backward(); opt.step()
out = sys.stdout
for i in range(a.lines):
    out.write(f"train loss {1.0 / (i + 1):.6f} at {i}{pad}\\n")
out.write(f"val loss {0.5 + a.seed / 1000:.6f}\\n")
"""

ROLES = (("launcher", "launch.py"), ("evaluate", "evaluate.py"), ("bakeoff run", "bin/bakeoff"))


def _role(pid: int, cmdline: str) -> str | None:
    for role, mark in ROLES:
        if mark in cmdline:
            if role == "launcher" and _is_worker(pid):
                return "script (worker)"  # launch.py again, as the process that runs the script (runpy)
            return role
    return None


def _is_worker(pid: int) -> bool:
    try:
        return f"{WORKER_ENV}=1".encode() in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


class Sampler(threading.Thread):
    """Each role's largest VmHWM (bytes) among the processes under `root_pid`, sampled until stopped."""

    def __init__(self, root_pid: int):
        super().__init__(daemon=True)
        self.root_pid, self.peaks, self.done = root_pid, {}, threading.Event()

    def _tree(self) -> list[int]:
        found, frontier = [], [self.root_pid]
        while frontier:
            pid = frontier.pop()
            found.append(pid)
            try:
                for task in Path(f"/proc/{pid}/task").iterdir():
                    frontier += [int(c) for c in (task / "children").read_text().split()]
            except (OSError, ValueError):
                pass
        return found

    def run(self) -> None:
        while not self.done.is_set():
            for pid in self._tree():
                try:
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                    hwm = next(int(line.split()[1]) * 1024 for line in
                               Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("VmHWM:"))
                except (OSError, StopIteration, ValueError):
                    continue
                role = _role(pid, cmd)
                if role:
                    self.peaks[role] = max(self.peaks.get(role, 0), hwm)
            time.sleep(0.05)


def bake(lines: int, tmp: Path, pad: int = 0) -> tuple[dict[str, int], float, int]:
    src = tmp / f"src-{lines}"
    src.mkdir()
    (src / "train.py").write_text(SCRIPT)
    spec = tmp / f"bakeoff-{lines}.yaml"
    spec.write_text(json.dumps({
        "name": "output-memory", "entrypoint": {
            "source_dir": src.name, "script": "train.py", "mode": "script",
            "script_mode": {"metrics": [{"name": "train_loss", "regex": r"train loss ([0-9.]+)"},
                                        {"name": "val_loss", "regex": r"val loss ([0-9.]+)"}],
                            "seed": {"argument": "seed"}}},
        "hyperparameters": {"lines": lines, "pad": pad},
        "legs": [{"name": "m5", "instance_type": "ml.m5.xlarge", "precision": "fp32", "max_runtime_s": 3600},
                 {"name": "g5", "instance_type": "ml.g5.xlarge", "precision": "fp32", "max_runtime_s": 3600}],
        "seeds": 1, "parity": {"metric": "val_loss", "margin": 0.5, "baseline": "g5"}}))
    started = time.monotonic()
    proc = subprocess.Popen([str(BAKEOFF), "run", str(spec), "--out", str(tmp / f"out-{lines}"), "--no-mlflow",
                             "--jobs", "1"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sampler = Sampler(proc.pid)
    sampler.start()
    output = proc.communicate()[0]
    sampler.done.set()
    sampler.join()
    wall = time.monotonic() - started
    if proc.returncode not in (0, 1, 3):
        raise SystemExit(f"bakeoff run exited {proc.returncode}:\n{output[-3000:]}")
    size = (tmp / f"out-{lines}" / "jobs" / "m5-s0" / "opt" / "ml" / "model" / "metrics.jsonl").stat().st_size
    return sampler.peaks, wall, size


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=5_000_000)
    ap.add_argument("--baseline", type=int, default=50_000)
    ap.add_argument("--line-bytes", type=int, default=0, help="pad each line to about this many bytes (long lines: "
                    "--lines 100 --baseline 10 --line-bytes 10000000)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-output-") as tmp:
        base, base_wall, base_size = bake(args.baseline, Path(tmp), args.line_bytes)
        big, big_wall, big_size = bake(args.lines, Path(tmp), args.line_bytes)
    result = {"lines": args.lines, "baseline_lines": args.baseline, "line_bytes": args.line_bytes or None,
              "metrics_jsonl_bytes": {"baseline": base_size, "large": big_size},
              "wall_s": {"baseline": round(base_wall, 1), "large": round(big_wall, 1)}, "peak_mib": {}, "ratio": {}}
    for role in (*(r for r, _ in ROLES), "script (worker)"):
        if role in base and role in big:
            result["peak_mib"][role] = {"baseline": round(base[role] / 2**20, 1), "large": round(big[role] / 2**20, 1)}
            result["ratio"][role] = round(big[role] / base[role], 3)
    result["goal"] = "every ratio under 1.25"
    result["met"] = all(result["ratio"].get(r, 9) < 1.25 for r, _ in ROLES)
    print(json.dumps(result, indent=2))
    return 0 if result["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
