"""Time to first step of one local job, this checkout against a baseline, in one run.

The local engine lays out a one-seed quickstart (MLflow on, as `bakeoff run` logs by default):
a cpu job (the p4d leg off a GPU) and an xla job (the trn1 leg on PyTorch/XLA's CPU device).
Each job is then run again, round by round, once with this checkout's entrypoints and once with
the baseline's, the way the engine runs it: its code unpacked fresh into opt/ml/code (no bytecode
cache), `python launch.py train.py` started there with the job's environment, one job at a time.
`--floor` adds this checkout with MLflow off: what start-up costs without MLflow at all.
`--warm` adds this checkout's jobs started as the engine now starts them: the worker forked from
the leg's warm interpreter (bakeoff_runtime.training.warm_server, pipelines/local/warm.py). Each round
starts a fresh one together with a job (`new_warm_first`: a leg's first job, which waits for the
warm interpreter's imports) and then runs the job again (`new_warm_later`: every later job of
the leg).

Two figures per job: from starting the process to reading its `step=0` line (what a user waits
for), and the job's own `time_to_first_step_s` from summary.json (from launch.py's start, the
figure the bake-off reports). Medians over the rounds, and new/baseline ratios. PyTorch/XLA on
CPU cannot load its persistent compile cache back (pytorch/xla 9094), so every xla job compiles
its first step: that part of its figure is not start-up and shows as `first_step_s`. The
steady-state throughput is there to show that the MLflow client's work, wherever it runs, does
not land in the window the verdict measures.

    mkdir /tmp/ttfs-base && git archive REV | tar -x -C /tmp/ttfs-base   # the code to compare against
    .venv/bin/python benchmarks/time_to_first_step.py --baseline /tmp/ttfs-base [--rounds 3] [--floor] [--warm]

Only the baseline's entrypoints/ are run (with this checkout's Python and packages).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bakeoff.pipelines.local.substitutions import host_environment
from bakeoff.pipelines.local.warm import ADDRESS_ENV, server_environment
from bakeoff_runtime.contract import ENV, parse_step_line

ROOT = Path(__file__).resolve().parent.parent
JOBS = {"cpu": "p4d-s0", "xla": "trn1-s0"}


def lay_out(out: Path, steps: int) -> None:
    exe = str(Path(sys.executable).with_name("bakeoff"))
    proc = subprocess.run([exe, "run", str(ROOT / "examples" / "quickstart.yaml"), "--out", str(out),
                           "--set", "seeds=1", "--set", f"training.max_steps={steps}",
                           "--set", "training.eval_interval=0"], capture_output=True, text=True)
    for name in JOBS.values():
        if not (out / "jobs" / name / "local.json").exists():
            sys.exit(f"the layout run left no job {name} (exit {proc.returncode}):\n{proc.stdout[-2000:]}"
                     f"\n{proc.stderr[-2000:]}")


def code_copy(source: Path, target: Path) -> None:
    """The job's code as the bundle unpacks it: the entrypoints' files, no bytecode."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def job_environment(layout: Path, job: str) -> dict[str, str]:
    spec = json.loads((layout / "jobs" / job / "local.json").read_text())
    return {**host_environment(), **spec["environment"]}


class WarmInterpreter:
    """A leg's warm interpreter as the engine starts it (pipelines/local/warm.py)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.dir = tempfile.mkdtemp(prefix="ttfs-warm-")
        self.address = os.path.join(self.dir, "leg.sock")
        server = ROOT / "entrypoints" / "bakeoff_runtime" / "training" / "warm_server.py"
        self.proc = subprocess.Popen([sys.executable, str(server), self.address], env=server_environment(env),
                                     stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, start_new_session=True)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(30)
        shutil.rmtree(self.dir, ignore_errors=True)


def run_job(layout: Path, job: str, code: Path, work: Path, extra_env: dict[str, str] | None = None) -> dict:
    """One run of a laid-out job with `code` as its entrypoints: seconds to its first step line,
    and what its summary.json says."""
    opt_ml = work / "opt" / "ml"
    shutil.copytree(layout / "jobs" / job / "opt" / "ml" / "input", opt_ml / "input", symlinks=True)
    for sub in ("model", "output/data", "checkpoints"):
        (opt_ml / sub).mkdir(parents=True, exist_ok=True)
    code_copy(code, opt_ml / "code")
    env = job_environment(layout, job)
    # A job of its own (no earlier attempt for the MLflow sink to replace), in its own tree.
    env.update({ENV["opt_ml"]: str(opt_ml), ENV["job_key"]: uuid.uuid4().hex[:16], **(extra_env or {})})
    first = None
    log = []
    started = time.time()
    proc = subprocess.Popen([sys.executable, "launch.py", "train.py"], cwd=opt_ml / "code", env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    assert proc.stdout is not None
    for line in proc.stdout:
        log.append(line)
        if first is None and (parsed := parse_step_line(line)) is not None and parsed[0] == 0:
            first = time.time() - started
    exit_code = proc.wait()
    (work / "stdout.log").write_text("".join(log))
    summary_path = opt_ml / "model" / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    return {"exit_code": exit_code, "to_step_line_s": first, "status": summary.get("status"),
            "warm": any("forked from the leg's warm interpreter" in line for line in log),
            "time_to_first_step_s": summary.get("time_to_first_step_s"), "first_step_s": summary.get("first_step_s"),
            "steady_tokens_per_sec": (summary.get("throughput") or {}).get("tokens_per_sec"),
            "peak_host_memory_bytes": summary.get("peak_host_memory_bytes"),
            "mlflow_error": (summary.get("mlflow") or {}).get("error"),
            "mlflow_enabled": (summary.get("mlflow") or {}).get("enabled")}


def median(runs: list[dict], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return round(statistics.median(values), 3) if values else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", type=Path, help="a checkout to compare against (its entrypoints/ are run)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=60, help="training steps per job")
    ap.add_argument("--floor", action="store_true", help="also run this checkout with MLflow off")
    ap.add_argument("--jobs", default="cpu,xla", help="which jobs: cpu, xla or both (comma-separated)")
    ap.add_argument("--warm", action="store_true", help="also run jobs forked from a warm interpreter per leg")
    args = ap.parse_args()
    variants: dict[str, tuple[Path, dict[str, str]]] = {"new": (ROOT / "entrypoints", {})}
    if args.baseline is not None:
        base = args.baseline.resolve() / "entrypoints"
        if not (base / "launch.py").exists():
            sys.exit(f"--baseline {args.baseline}: no entrypoints/launch.py there")
        variants = {"baseline": (base, {}), **variants}
    if args.floor:
        variants["new_without_mlflow"] = (ROOT / "entrypoints", {ENV["mlflow_experiment"]: ""})
    if args.warm:  # run in this order, one warm interpreter per round and kind (run_warm)
        variants["new_warm_first"] = (ROOT / "entrypoints", {})
        variants["new_warm_later"] = (ROOT / "entrypoints", {})
    kinds = [k.strip() for k in args.jobs.split(",") if k.strip()]
    load_before = os.getloadavg()[0]  # other work on the machine: figures under load are noisier
    with tempfile.TemporaryDirectory(prefix="ttfs-") as tmp:
        layout = Path(tmp) / "layout"
        lay_out(layout, args.steps)
        runs: dict[str, dict[str, list[dict]]] = {kind: {v: [] for v in variants} for kind in kinds}
        for r in range(args.rounds):
            # Interleaved, order alternating per round: drift on a shared machine hits both alike.
            cold = [v for v in variants if not v.startswith("new_warm")]
            order = cold if r % 2 == 0 else list(reversed(cold))
            for kind in kinds:
                for variant in order:
                    code, extra = variants[variant]
                    result = run_job(layout, JOBS[kind], code, Path(tmp) / f"{kind}-{variant}-{r}", extra)
                    runs[kind][variant].append(result)
                    print(f"round {r} {kind} {variant}: " + json.dumps(result), file=sys.stderr, flush=True)
                if args.warm:
                    warm = WarmInterpreter(job_environment(layout, JOBS[kind]))
                    try:
                        for variant in ("new_warm_first", "new_warm_later"):
                            result = run_job(layout, JOBS[kind], ROOT / "entrypoints",
                                             Path(tmp) / f"{kind}-{variant}-{r}", {ADDRESS_ENV: warm.address})
                            runs[kind][variant].append(result)
                            print(f"round {r} {kind} {variant}: " + json.dumps(result), file=sys.stderr, flush=True)
                    finally:
                        warm.close()
    out: dict = {"benchmark": "time_to_first_step", "rounds": args.rounds, "steps": args.steps,
                 "cpu_count": os.cpu_count(), "load_average_before_after": [load_before, os.getloadavg()[0]],
                 "mlflow": "on (sqlite store of the run directory)", "jobs": {}}
    for kind in kinds:
        figures = {v: {"to_step_line_s": median(rs, "to_step_line_s"),
                       "time_to_first_step_s": median(rs, "time_to_first_step_s"),
                       "first_step_s": median(rs, "first_step_s"),
                       "steady_tokens_per_sec": median(rs, "steady_tokens_per_sec"),
                       "peak_host_memory_mib": (round(m / 2**20) if (m := median(rs, "peak_host_memory_bytes"))
                                                else None),
                       "all_completed": all(x["status"] == "completed" for x in rs),
                       "all_forked_warm": all(x["warm"] for x in rs),
                       "mlflow_errors": sorted({str(x["mlflow_error"]) for x in rs if x["mlflow_error"]})}
                   for v, rs in runs[kind].items()}
        entry: dict = {**figures}
        if "baseline" in figures:
            for key in ("to_step_line_s", "time_to_first_step_s", "steady_tokens_per_sec"):
                b, n = figures["baseline"][key], figures["new"][key]
                entry[f"new_over_baseline_{key}"] = round(n / b, 3) if b and n else None
            # Each round's pair ran back to back: their ratio is the figure drift on a shared machine moves least.
            paired = [n["time_to_first_step_s"] / b["time_to_first_step_s"]
                      for b, n in zip(runs[kind]["baseline"], runs[kind]["new"], strict=True)
                      if b["time_to_first_step_s"] and n["time_to_first_step_s"]]
            entry["new_over_baseline_time_to_first_step_s_paired"] = (
                round(statistics.median(paired), 3) if paired else None)
            b, n = (figures[v]["time_to_first_step_s"] or 0.0 for v in ("baseline", "new"))
            bf, nf = (figures[v]["first_step_s"] or 0.0 for v in ("baseline", "new"))
            # Start-up alone: before the training loop's first step began.
            entry["new_over_baseline_before_loop"] = round((n - nf) / (b - bf), 3) if b - bf > 0 else None
            for variant in ("new_warm_first", "new_warm_later"):
                if variant not in figures:
                    continue
                for key in ("to_step_line_s", "time_to_first_step_s"):
                    b, n = figures["baseline"][key], figures[variant][key]
                    entry[f"{variant}_over_baseline_{key}"] = round(n / b, 3) if b and n else None
        out["jobs"][kind] = entry
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
