"""Operating characteristics of the parity verdict as shipped (Monte Carlo).

    .venv/bin/python benchmarks/verdict_oc.py [--reps N] [--seed 2026] [--cells]

Simulates bake-offs whose per-seed metric is normal and asks the shipped decision
rule (`bakeoff_runtime.verdict.stats`) for pass / fail / inconclusive:

1. the grid: paired and unpaired, seeds 2..8, margin/sigma 1..5, true difference
   0, the margin, twice the margin;
2. at the seeds the tool recommends (`seeds_for_power`, at the default power 0.8 and
   at 0.95), for sigma known and for sigma estimated from a 3-seed pilot;
3. the coverage of the paired t interval against the percentile bootstrap interval
   the evaluation used to report (why that one was dropped);
4. the cells beyond the normal grid (`verdict_oc_cells.py`, through `evaluate()` itself): a naive
   re-decision after inconclusive, random breakage, skewed and heavy-tailed differences, a
   quantised metric, three legs against one baseline, `--until-decided` as shipped and the
   doomed-leg rule. `--cells` runs section 4 alone (about 3-4 minutes on 2 cores at its default
   2000 replicates a condition; `--reps 20000` for high precision, about 40 minutes).

`--reps` defaults to 4000 for sections 1-3 and 2000 for section 4.

Goals (section 2, power 0.95): identical legs pass >= 95%, a regression of twice the
margin fails (not merely inconclusive) >= 95%, a true difference equal to the margin
passes <= alpha. The vectorised simulation is checked against `stats.compare` on a
sample of the same draws, so the figures are those of the shipped code path.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "entrypoints"))

from verdict_oc_cells import WORKERS, run_cells  # noqa: E402

from bakeoff_runtime.verdict import stats  # noqa: E402

ALPHA = 0.05


def intervals(base: np.ndarray, leg: np.ndarray, paired: bool) -> tuple[np.ndarray, np.ndarray]:
    """The shipped intervals, vectorised over simulated bake-offs (rows)."""
    n = base.shape[1]
    if paired:
        d = leg - base
        mean, se = d.mean(1), d.std(1, ddof=1) / math.sqrt(n)
        half = stats.t_quantile(1 - ALPHA, n - 1) * se
    else:
        va, vb = base.var(1, ddof=1) / n, leg.var(1, ddof=1) / n
        mean, se = leg.mean(1) - base.mean(1), np.sqrt(va + vb)
        df = (va + vb) ** 2 / (va ** 2 / (n - 1) + vb ** 2 / (n - 1))
        from scipy import stats as st

        half = st.t.ppf(1 - ALPHA, df) * se
    return mean - half, mean + half


def simulate(n: int, sigma: float, margin: float, delta: float, paired: bool, reps: int, rng) -> dict[str, float]:
    """P(pass), P(fail): paired draws per-seed differences around `delta` with SD sigma (the
    legs share a per-seed effect); unpaired draws each leg with SD sigma."""
    if paired:
        shared = rng.normal(0, 1.0, (reps, n))  # the seed's own effect, identical on both legs
        base = shared
        leg = shared + rng.normal(delta, sigma, (reps, n))
    else:
        base = rng.normal(0, sigma, (reps, n))
        leg = rng.normal(delta, sigma, (reps, n))
    lo, hi = intervals(base, leg, paired)
    out = stats.decide(lo, hi, margin)
    check_against_shipped(base[:25], leg[:25], out[:25], margin, paired)
    return {k: float((out == k).mean()) for k in (stats.PASS, stats.FAIL)}


def check_against_shipped(base, leg, outcomes, margin, paired: bool) -> None:
    """The vectorised rule must give what `stats.compare` (the evaluation's call) gives:
    shared seed keys make it pair, disjoint ones make it use Welch."""
    for b, lg, o in zip(base, leg, outcomes, strict=True):
        offset = 0 if paired else 1000
        r = stats.compare(dict(enumerate(b)), {i + offset: v for i, v in enumerate(lg)}, margin=margin, alpha=ALPHA)
        assert r["test"] == ("paired" if paired else "welch")
        if r["outcome"] != o:
            raise AssertionError(f"vectorised rule disagrees with stats.compare: {o} vs {r['outcome']}")


def grid(reps: int, rng) -> None:
    print("1. The grid: P(pass) / P(fail) for a true difference of 0, the margin and twice the margin")
    print(f"{'design':9} {'m/sigma':>7} " + " ".join(f"{'n=' + str(n):>17}" for n in range(2, 9)))
    for paired in (True, False):
        for ratio in (1, 2, 3, 4, 5):
            for label, mult in (("0", 0.0), ("m", 1.0), ("2m", 2.0)):
                cells = []
                for n in range(2, 9):
                    r = simulate(n, 1.0, float(ratio), mult * ratio, paired, reps, rng)
                    cells.append(f"{r['pass']:.2f}/{r['fail']:.2f}")
                name = ("paired" if paired else "unpaired") + f" d={label}"
                print(f"{name:13} {ratio:>3} " + " ".join(f"{c:>17}" for c in cells))
        print()


def at_recommended(reps: int, rng) -> bool:
    se95, se05 = math.sqrt(0.95 * 0.05 / reps), math.sqrt(0.05 * 0.95 / reps)
    print("2. At the seeds the tool recommends (sigma known = 1). A goal counts as met within two Monte Carlo")
    print(f"   standard errors of it ({2 * se95:.4f} at {reps} simulated bake-offs per cell)")
    print(f"{'power':>5} {'design':8} {'m/sigma':>7} {'seeds':>9} {'pass|d=0':>9} {'fail|d=2m':>10} {'pass|d=m':>9}")
    ok = True
    for power in (0.8, 0.95):
        for paired in (True, False):
            for ratio in (1, 2, 3, 4, 5):
                n = stats.seeds_for_power(1.0, float(ratio), ALPHA, power, paired)
                same = simulate(n, 1.0, ratio, 0.0, paired, reps, rng)["pass"]
                worse = simulate(n, 1.0, ratio, 2.0 * ratio, paired, reps, rng)["fail"]
                edge = simulate(n, 1.0, ratio, float(ratio), paired, reps, rng)["pass"]
                goal = "" if power < 0.95 else (
                    "  goals met" if same >= 0.95 - 2 * se95 and worse >= 0.95 - 2 * se95
                    and edge <= ALPHA + 2 * se05 else "  GOAL MISSED")
                ok &= power < 0.95 or goal == "  goals met"
                print(f"{power:>5} {'paired' if paired else 'unpaired':8} {ratio:>7} {n:>9} {same:>9.3f} "
                      f"{worse:>10.3f} {edge:>9.3f}{goal}")
    print()
    print("   two-stage: a 3-seed pilot, then the seeds the evaluation recommends from its spread (fresh runs),")
    print("   paired, power 0.8: as the evaluation plans (on the 80% upper confidence limit of the pilot's SD)")
    print("   and, for comparison, planning on the pilot's SD as if it were exact")
    for ratio in (1, 2, 3, 4, 5):
        pilots = rng.normal(0, 1.0, (reps // 8, 3))
        sds = pilots.std(1, ddof=1)
        for label, df in (("UCL 80%", 2), ("plug-in", None)):
            ns = [stats.seeds_for_power(float(s), float(ratio), ALPHA, 0.8, sigma_df=df)
                  or stats.MAX_RECOMMENDED_SEEDS for s in sds]
            passes = [simulate(k, 1.0, ratio, 0.0, True, 1, rng)["pass"] for k in ns]
            print(f"   m/sigma {ratio} {label:8}: median seeds {int(np.median(ns)):3}, mean {np.mean(ns):5.1f}; "
                  f"identical legs pass {np.mean(passes):.3f}")
    print()
    return ok


def coverage(reps: int, rng) -> None:
    print("3. Coverage of a nominal interval for the difference (paired, true difference 0)")
    print(f"{'seeds':>5} {'paired t 90%':>13} {'percentile bootstrap 95% (dropped)':>36}")
    for n in (2, 3, 5, 8):
        d = rng.normal(0, 1, (reps, n))
        mean, se = d.mean(1), d.std(1, ddof=1) / math.sqrt(n)
        half = stats.t_quantile(0.95, n - 1) * se
        t_cov = float(((mean - half < 0) & (mean + half > 0)).mean())
        k = 400
        idx = rng.integers(0, n, (min(reps, 1000), k, n))
        boot = np.take_along_axis(np.repeat(d[: idx.shape[0], None, :], k, 1), idx, 2).mean(2)
        lo, hi = np.percentile(boot, [2.5, 97.5], axis=1)
        b_cov = float(((lo < 0) & (hi > 0)).mean())
        print(f"{n:>5} {t_cov:>13.3f} {b_cov:>36.3f}")
    print()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=None,
                    help="simulated bake-offs per cell (default 4000 for sections 1-3, 2000 for section 4)")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--cells", action="store_true", help="run only section 4, the cells beyond the grid")
    ap.add_argument("--workers", type=int, default=min(WORKERS, len(os.sched_getaffinity(0))),
                    help="processes for section 4 (its figures do not depend on it)")
    args = ap.parse_args()
    ok = True
    if not args.cells:
        reps = args.reps or 4000
        rng = np.random.default_rng(args.seed)
        grid(reps, rng)
        ok = at_recommended(reps, rng)
        coverage(reps, rng)
        print("goals (power 0.95 recommendation):", "met" if ok else "MISSED")
        print()
    cells_ok = run_cells(args.reps or 2000, args.seed, args.workers)
    return 0 if ok and cells_ok else 1


if __name__ == "__main__":
    sys.exit(main())
