"""`bakeoff ui RUN_DIR` start-up: time from launch to the first HTTP 200, against `mlflow ui` with its
defaults (what `bakeoff ui` used to run) on the same store in the same run.

Goal: under 5 s on 2 cores. Also counts the processes each leaves running and the warning lines
each prints (the old way printed one StarletteDeprecationWarning per worker).

    .venv/bin/python benchmarks/ui_startup.py [RUN_DIR] [--repeat 1]

Without RUN_DIR, a store with one run is made in a temporary directory first (not timed).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bakeoff.pipelines.cli.ui import STORE, answers, default_command, port_free  # noqa: E402


def _port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_store(run_dir: Path) -> None:
    from mlflow.tracking import MlflowClient

    db = run_dir / STORE
    db.parent.mkdir(parents=True, exist_ok=True)
    client = MlflowClient(f"sqlite:///{db}")
    exp = client.create_experiment("bakeoff-bench", artifact_location=(db.parent / "artifacts").as_uri())
    run = client.create_run(exp, run_name="bench", tags={"bakeoff.role": "parent"})
    client.log_metric(run.info.run_id, "val_loss", 1.0)
    client.set_terminated(run.info.run_id)


def timed_start(argv: list[str], port: int, env: dict[str, str] | None = None,
                timeout_s: float = 300.0) -> dict:
    """Seconds from launch to the first 200 on `/`, processes in its session then, warning lines."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, env={**os.environ, **(env or {})}, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        seconds = None
        try:
            while time.perf_counter() - t0 < timeout_s and proc.poll() is None:
                if answers(f"http://127.0.0.1:{port}/", timeout=1.0) == 200:
                    seconds = time.perf_counter() - t0
                    break
                time.sleep(0.05)
            time.sleep(1.0)  # let late workers and their warnings appear before counting
            procs = subprocess.run(["pgrep", "-s", str(proc.pid)], capture_output=True, text=True).stdout.split()
        finally:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(proc.pid, signal.SIGKILL)
        out.seek(0)
        text = out.read().decode(errors="replace")
    free_by = time.monotonic() + 30
    while not port_free("127.0.0.1", port) and time.monotonic() < free_by:
        time.sleep(0.2)
    return {"seconds": round(seconds, 2) if seconds else None, "processes": len(procs),
            "warning_lines": sum("Warning" in line for line in text.splitlines()),
            "output_lines": len(text.splitlines())}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir", nargs="?", help="a run directory with an MLflow store (default: make one)")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    tmp = None
    if args.run_dir:
        run_dir = Path(args.run_dir)
    else:
        tmp = tempfile.TemporaryDirectory()
        run_dir = Path(tmp.name)
        make_store(run_dir)
    db = (run_dir / STORE).resolve()
    bakeoff = str(Path(sys.executable).with_name("bakeoff"))
    old, new = [], []
    for _ in range(args.repeat):
        port = _port()
        argv, env = default_command(db, port)
        old.append(timed_start(argv, port, env))
        port = _port()
        new.append(timed_start([bakeoff, "ui", str(run_dir), "--port", str(port)], port))
    old_s = statistics.median(r["seconds"] for r in old if r["seconds"]) if any(r["seconds"] for r in old) else None
    new_s = statistics.median(r["seconds"] for r in new if r["seconds"]) if any(r["seconds"] for r in new) else None
    print(json.dumps({
        "benchmark": "ui_startup", "cpus": os.cpu_count(), "repeat": args.repeat,
        "mlflow_ui_defaults": {"median_s": old_s, "runs": old},
        "bakeoff_ui": {"median_s": new_s, "runs": new},
        "speedup": round(old_s / new_s, 2) if old_s and new_s else None,
        "goal_s": 5.0, "met": bool(new_s and new_s < 5.0)}, indent=2))
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
