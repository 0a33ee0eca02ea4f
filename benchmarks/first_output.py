"""What a person at a terminal waits for in `bakeoff run`: the time from pressing Enter to the first
byte on the terminal, and how far the bake-off's "about N left" was from the truth at the run's midpoint.

The command runs in a pseudo-terminal (benchmarks/pty_run.py), 100 columns wide, from a fresh run
directory. The midpoint is the job-end line nearest half-way between the spawn and the last job's end;
its estimate is compared with the time that really remained to the last job's end (the evaluation
after it is not in the estimate). Every job-end line's estimate is listed too, beside what the per-leg
mean alone (the estimate before running jobs were counted) would have said at that line.

Goals: the first byte within 1 s on an idle machine; the midpoint's estimate within 30% of the truth.

    .venv/bin/python benchmarks/first_output.py [--spec examples/quickstart.yaml] [--set KEY=VALUE ...]
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

from pty_run import TerminalRun

ROOT = Path(__file__).resolve().parent.parent
FIRST_BYTE_GOAL_S = 1.0
ETA_ERROR_GOAL = 0.30
# "[3/10] trn1-s1: completed, 14s, ... (bake-off: about 1.2min left)" (pipelines/local/progress.py)
_END = re.compile(r"^\[(\d+)/(\d+)\] (\S+)-s\d+: (\w+), ([\d.]+)(s|min)\b"
                  r".*?(?:\(bake-off: about ([\d.]+)(s|min) left\))?$")


def _seconds(value: str, unit: str) -> float:
    return float(value) * (60.0 if unit == "min" else 1.0)


def _mean_only(ends: list[dict], at_once: int) -> list[float | None]:
    """At each job end, what each leg's own mean wall time alone says is left (no running job counted)."""
    per_leg = Counter(e["leg"] for e in ends)
    out: list[float | None] = []
    for k in range(len(ends)):
        done = ends[:k + 1]
        walls: dict[str, list[float]] = {}
        for e in done:
            walls.setdefault(e["leg"], []).append(e["wall_s"])
        mean = sum(e["wall_s"] for e in done) / len(done)
        lefts = {leg: n - sum(1 for e in done if e["leg"] == leg) for leg, n in per_leg.items()}
        remaining = sum(lefts.values())
        if remaining <= 0:
            out.append(None)
            continue
        work = sum(n * (sum(walls[leg]) / len(walls[leg]) if leg in walls else mean) for leg, n in lefts.items())
        out.append(round(work / min(at_once, remaining), 1))
    return out


def one_run(spec: str, overrides: list[str]) -> dict:
    exe = str(Path(sys.executable).with_name("bakeoff"))
    with tempfile.TemporaryDirectory() as tmp:
        argv = [exe, "run", spec, "--out", tmp, "--no-mlflow"] + [a for o in overrides for a in ("--set", o)]
        run = TerminalRun(argv, columns=100)
        try:
            code = run.wait(1800)
        finally:
            run.kill()
        plan = json.loads((Path(tmp) / "plan.json").read_text())
    at_once = int((plan.get("local") or {}).get("jobs_at_once") or 1)
    ends = []
    for at, line in run.timed_lines():
        m = _END.match(line)
        if m:
            ends.append({"at_s": round(at, 1), "job": line.split(":")[0], "leg": m.group(3),
                         "wall_s": _seconds(m.group(5), m.group(6)),
                         "eta_s": _seconds(m.group(7), m.group(8)) if m.group(7) else None})
    if not ends:
        sys.exit(f"first_output: no job ended (exit {code}):\n" + "\n".join(run.lines()[-30:]))
    last = ends[-1]["at_s"]
    for e, before in zip(ends, _mean_only(ends, at_once), strict=True):
        e["actual_left_s"] = round(last - e["at_s"], 1)
        e["per_leg_mean_only_eta_s"] = before
    middle = min((e for e in ends if e["eta_s"] is not None), key=lambda e: abs(e["at_s"] - last / 2), default=None)
    result = {"exit_code": code, "first_byte_s": round(run.first_byte_s() or -1, 3),
              "first_line": run.lines()[0] if run.lines() else None, "jobs_at_once": at_once,
              "last_job_end_s": last, "job_ends": ends}
    if middle is not None:
        error = middle["eta_s"] - middle["actual_left_s"]
        result["midpoint"] = {**middle, "error_s": round(error, 1),
                              "relative_error": round(error / middle["actual_left_s"], 3)
                              if middle["actual_left_s"] else None}
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", default=str(ROOT / "examples" / "quickstart.yaml"))
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args()
    result = {"benchmark": "first_output", "spec": args.spec, "overrides": args.overrides,
              **one_run(args.spec, args.overrides)}
    middle = result.get("midpoint") or {}
    result["goals"] = {"first_byte_s": FIRST_BYTE_GOAL_S, "midpoint_relative_error": ETA_ERROR_GOAL,
                       "first_byte_met": 0 <= result["first_byte_s"] <= FIRST_BYTE_GOAL_S,
                       "midpoint_met": middle.get("relative_error") is not None
                       and abs(middle["relative_error"]) <= ETA_ERROR_GOAL}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
