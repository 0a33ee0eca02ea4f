"""Coverage of the projection's per-run saving interval against a known true saving (Monte Carlo).

    .venv/bin/python benchmarks/projection_coverage.py [--replicates 4000] [--seed 2026] [--quick]
                                                       [--json PATH]

Simulated bake-offs whose true steady-state throughputs are known: a target leg (trn1) and a
baseline leg (p4d), measured at the production's own instance count (scaling "as measured", so
the seeds are the interval's only uncertainty), production size U tokens, the same time to the
first step on both legs cold and warm. Each seed's measured throughput is the truth times
(1 + e), e ~ Normal(0, cv), independent across legs and seeds; each replicate draws its own cv
per leg from CV_RANGE, so the figures average over noise levels rather than hold at one. Seeds
0..n-1 on both legs, so `project` pairs them; parity passed, so it computes a saving.

The true saving is the same cost formula at the true throughputs:
instances x price x (U / T + time to first step) / 3600, baseline minus target.

Every interval comes out of `bakeoff_runtime.verdict.projection.project` itself, one call per
replicate. Reported per seed count: coverage of the nominal interval, its Monte Carlo SE
sqrt(p (1 - p) / R), whether |coverage - nominal| <= 2 SE, the misses below and above the
truth (an asymmetry there points at the linearisation), and the interval's mean width relative
to the true saving. Exit 0 when every seed count is within 2 SE of nominal, 1 otherwise.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any, cast

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "entrypoints"))

from bakeoff_runtime.contract.decision import DecisionConfig  # noqa: E402
from bakeoff_runtime.verdict.projection import project  # noqa: E402

CONFIDENCE = 0.90
SEED_COUNTS = (3, 5, 10)
CV_RANGE = (0.03, 0.08)
TARGET, BASELINE = "trn1", "p4d"
# Round, plausible figures: the target cheaper per token but slower, so the saving is a
# difference of two comparable costs (about a quarter of the baseline's), not a trivial gap.
INSTANCES = 4
TRUE_TP = {TARGET: 9000.0, BASELINE: 10000.0}          # tokens/s at INSTANCES instances
PRICE = {TARGET: 21.50, BASELINE: 32.77}               # USD per instance-hour, on demand
UNITS = 5e9                                            # tokens in one production run
# Cold = warm so the first-run split plays no part; non-zero so the constant is carried through.
FIRST_STEP_S = 600.0


def true_cost(name: str, throughput: float) -> float:
    return INSTANCES * PRICE[name] * (UNITS / throughput + FIRST_STEP_S) / 3600


TRUE_SAVING = true_cost(BASELINE, TRUE_TP[BASELINE]) - true_cost(TARGET, TRUE_TP[TARGET])


def leg(name: str, throughputs: list[float]) -> dict:
    runs = [{"seed": s, "status": "completed", "throughput": t, "units_processed": t * 1000.0,
             "steps_completed": 100, "billable_s": None, "wall_time_s": None} for s, t in enumerate(throughputs)]
    return {"instance_type": {TARGET: "ml.trn1.32xlarge", BASELINE: "ml.p4d.24xlarge"}[name],
            "instance_count": INSTANCES, "throughput_unit": "tokens/s", "runs": runs,
            "price": {"usd_per_hour": PRICE[name], "source": "simulated", "as_of": None, "note": None},
            "compile_cache": {"time_to_first_step_s_cold": FIRST_STEP_S, "time_to_first_step_s_warm": FIRST_STEP_S},
            "time_to_first_step_s_mean": FIRST_STEP_S}


def evaluation(target: list[float], baseline: list[float]) -> dict:
    return {"legs": {TARGET: leg(TARGET, target), BASELINE: leg(BASELINE, baseline)},
            "parity": {"baseline": BASELINE},
            "checks": [{"name": f"parity:{TARGET}~{BASELINE}", "status": "passed", "why": None}],
            "scaling": {}, "speed": {"emulated": False}, "cost_basis": "simulated"}


DECISION: dict[str, Any] = {"production": {"units": UNITS, "unit": "tokens", "steps": None, "batch": None},
            "instances": {TARGET: INSTANCES, BASELINE: INSTANCES}, "runs_per_period": 1.0, "period": "quarter",
            "confidence": CONFIDENCE}


def saving(target: list[float], baseline: list[float]) -> tuple[float, float, float]:
    """(mean, low, high) of the per-run saving `project` gives."""
    c = project(evaluation(target, baseline), cast(DecisionConfig, DECISION))["comparisons"][0]
    if c["reason"] or not (c["pairing"] or "").startswith("paired"):
        raise AssertionError(f"the simulated bake-off was not compared as intended: {c['reason'] or c['pairing']}")
    s = c["saving_per_run_usd"]
    mean, low, high = (None, None, None) if s is None else (s["mean"], s["low"], s["high"])
    if mean is None or low is None or high is None:
        raise AssertionError(f"no saving interval: {s}")
    return mean, low, high


def check_truth_is_exact() -> None:
    """Noise-free seeds must project exactly the true saving, or coverage would measure a model mismatch."""
    mean, _, _ = saving([TRUE_TP[TARGET]] * 3, [TRUE_TP[BASELINE]] * 3)
    if not math.isclose(mean, TRUE_SAVING, rel_tol=1e-12):
        raise AssertionError(f"noise-free projection {mean!r} != true saving {TRUE_SAVING!r}")


def simulate(n: int, reps: int, rng: np.random.Generator) -> dict:
    cv = rng.uniform(*CV_RANGE, size=(reps, 2))
    noise_t = rng.standard_normal((reps, n)) * cv[:, :1]
    noise_b = rng.standard_normal((reps, n)) * cv[:, 1:]
    below = above = 0
    widths = []
    started = time.perf_counter()
    for i in range(reps):
        _, low, high = saving(list(TRUE_TP[TARGET] * (1 + noise_t[i])), list(TRUE_TP[BASELINE] * (1 + noise_b[i])))
        below += high < TRUE_SAVING   # the interval sits wholly below the truth
        above += low > TRUE_SAVING
        widths.append((high - low) / abs(TRUE_SAVING))
    seconds = time.perf_counter() - started
    p = 1 - (below + above) / reps
    se = math.sqrt(p * (1 - p) / reps)
    return {"seeds": n, "replicates": reps, "coverage": p, "se": se, "within_2se": abs(p - CONFIDENCE) <= 2 * se,
            "miss_below": below / reps, "miss_above": above / reps, "mean_rel_width": float(np.mean(widths)),
            "ms_per_project": 1000 * seconds / reps}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", "--reps", type=int, default=None, help="simulated bake-offs per seed count "
                    "(default 4000; 400 with --quick)")
    ap.add_argument("--quick", action="store_true", help="a fast smoke run: 400 replicates unless --replicates")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    args = ap.parse_args()
    reps = args.replicates or (400 if args.quick else 4000)
    check_truth_is_exact()
    rng = np.random.default_rng(args.seed)
    print(f"Coverage of the {CONFIDENCE:.0%} per-run saving interval (project(), paired seeds), {reps} replicates "
          f"per row; cv per leg ~ U{CV_RANGE}; true saving ${TRUE_SAVING:,.2f} per run "
          f"(baseline ${true_cost(BASELINE, TRUE_TP[BASELINE]):,.2f}, "
          f"target ${true_cost(TARGET, TRUE_TP[TARGET]):,.2f})")
    print(f"{'seeds':>5} {'coverage':>9} {'SE':>7} {'within 2SE':>10} {'miss below':>10} {'miss above':>10} "
          f"{'mean rel width':>14} {'ms/project':>10}")
    rows = []
    for n in SEED_COUNTS:
        r = simulate(n, reps, rng)
        rows.append(r)
        print(f"{n:>5} {r['coverage']:>9.4f} {r['se']:>7.4f} {'yes' if r['within_2se'] else 'NO':>10} "
              f"{r['miss_below']:>10.4f} {r['miss_above']:>10.4f} {r['mean_rel_width']:>14.3f} "
              f"{r['ms_per_project']:>10.3f}")
    ok = all(r["within_2se"] for r in rows)
    off = [r["seeds"] for r in rows if not r["within_2se"]]
    print(f"coverage within 2 SE of {CONFIDENCE:.2f} at every seed count: "
          + ("yes" if ok else f"NO (off at n = {', '.join(map(str, off))})"))
    if args.json:
        args.json.write_text(json.dumps({"benchmark": "projection_coverage", "confidence": CONFIDENCE,
                                         "cv_range": CV_RANGE, "true_saving_usd": TRUE_SAVING, "seed": args.seed,
                                         "rows": rows, "ok": ok}, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
