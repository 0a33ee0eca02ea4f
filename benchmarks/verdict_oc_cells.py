"""Section 4 of `verdict_oc.py`: operating characteristics of the verdict in the cells the normal grid leaves out.

    .venv/bin/python benchmarks/verdict_oc.py --cells [--reps 2000] [--seed 2026] [--workers 2]
    .venv/bin/python benchmarks/verdict_oc_cells.py [same options]

`--reps` is the replicates per condition of the cells decided through `evaluate()` (a, b, c, e;
default 2000: about 3-4 minutes on 2 CPU cores). Cell d runs 5 x reps `stats.compare` calls a
condition, cell f 25 x reps (50,000 at the default: the alpha of the sequential loop to about
+/-0.002), cell g 10 x reps simulated legs. High precision: `--reps 20000` (ten times the time,
about 35-40 minutes on 2 cores; 500,000 replicates in cell f). The figures do not depend on `--workers`
(every chunk of replicates has its own seed).

Every probability comes out of the shipped code path:

a. naive re-decision: `evaluate()` at 3 seeds, then, if inconclusive, again at full alpha on the
   seeds its `recommendation.seeds` asks for (capped at 20), the first 3 reused;
b. breakage: `evaluate()` on job lists where jobs diverge or crash at random;
c. skewed and heavy-tailed per-seed differences: `evaluate()`;
d. quantised metrics (accuracy on 200 examples): `stats.compare` with and without `resolution`;
e. three legs against one baseline: `evaluate()` on a four-leg config;
f. `--until-decided` with the shipped defaults: the per-look rule vectorised (the paired t interval
   at the look's level from `sequential.from_config`, read by `stats.decide`), checked replicate by
   replicate against the shipped loop (`evaluate()` with the `sequential` block, look by look, the
   looks from `bakeoff.pipelines.advice.rounds.next_size`);
g. the doomed-leg rule: vectorised, checked replicate by replicate against `DoomWatch`
   (pipelines/local/doomed.py) fed the same curves as job directories in seed-major order.

A goal "p <= g" (or ">= g") is met when the estimate is within two Monte Carlo standard errors of
g, the SE taken at g itself (sqrt(g (1 - g) / reps), what the estimate's SE is when the goal holds
with equality), as section 2 does; the SE printed beside each estimate is sqrt(p (1 - p) / reps).
Margin 1 in units of sigma, the SD of a per-seed paired difference, and alpha 0.05 unless a cell
says otherwise.
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import sys
import tempfile
import zlib
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "entrypoints"))
sys.path.insert(1, str(ROOT))

from bakeoff_runtime.verdict import group_sequential as seq  # noqa: E402
from bakeoff_runtime.verdict import stats  # noqa: E402
from bakeoff_runtime.verdict.evaluation import evaluate  # noqa: E402

ALPHA = 0.05
MARGIN = 1.0
SIGMA = 1.0
LEVEL = 10.0          # the metric's level (a loss): far from 0, so no spread floor binds on continuous values
CHUNKS = 8            # chunks of replicates per condition (each its own seed)
WORKERS = 2
NAIVE_CAP = 20        # cell a: the re-decision adds seeds up to the recommendation, at most this many
MODEL = {"parameters": 1000, "tensors": 3, "shapes": {"256x4": 1, "4": 1, "4x4": 1}}
EMPTY_DIGEST = {"train_curve": [], "evals": [], "train_records": 0, "first_nonfinite_train_step": None}


# --- synthetic bake-offs, in the shape load_jobs() returns -------------------------------------
def _job(leg: str, seed: int, value: float | None, state: str = "completed", metric: str = "val_loss") -> dict:
    summary: dict[str, Any] = {
        "leg": leg, "seed": seed, "status": state, "reason": None, "metrics": {},
        "throughput": {"unit": "tokens", "tokens_per_sec": 2000.0, "overall_per_sec": 2000.0, "units_processed": 2e6},
        "wall_time_s": 99.0,
        # What the validity checks read (validity.py): where the parameters lived (the baseline "base" on CUDA,
        # every other leg on the XLA device, as its neuron backend says), the same model on every leg, and a
        # first training loss. Without them a leg's backend is not shown and no verdict can pass.
        "model": {**MODEL, "devices": {"cuda": 3} if leg == "base" else {"xla": 3}},
        "compile": {"compiled_graphs": None if leg == "base" else 3, "compile_time_s": 0.0 if leg == "base" else 1.0},
        "peak_device_memory_bytes": 2**30 if leg == "base" else None,
        "first_train_loss": 5.5 + seed / 1000}
    if state == "completed":
        summary["metrics"] = {metric: float(value)}  # type: ignore[arg-type]
    elif state == "diverged":
        summary["reason"] = f"train_loss is nan at step {100 + seed}"
    else:  # a crash of the training script
        summary["status"], summary["failure_kind"] = "failed", "script"
        summary["reason"] = f"RuntimeError: NCCL error in all_reduce at step {100 + 7 * seed}"
    return {"dir": f"{leg}-s{seed}", "summary": summary, "summary_problem": None, "summary_problem_kind": None,
            "meta": {"billable_s": 100.0, "leg": leg, "seed": seed}, "digest": EMPTY_DIGEST, "failure": None}


def _config(legs: list[str], n: int, margin: float = MARGIN, direction: str = "minimize",
            resolution: float | None = None, sequential: dict | None = None, design: str = "fixed") -> dict:
    """One decision at the full alpha (`parity.design: fixed`) unless `design` says otherwise: the cells
    measure a single decision, the strictest case for its error rates (stage 1 of the default two-stage
    design reads a narrower level; the whole two-stage path is benchmarks/verdict_attempts.py's)."""
    parity = {"metric": "val_loss", "direction": direction, "margin": margin, "margin_type": "absolute",
              "alpha": ALPHA, "baseline": legs[0], "test": stats.EQUIVALENCE, "power": 0.8, "design": design}
    if resolution:
        parity["resolution"] = resolution
    cfg: dict[str, Any] = {
        "bakeoff": "verdict-oc", "spec_hash": "oc", "parity": parity,
        "legs": {name: {"instance_type": f"ml.type{i}", "instance_count": 1, "backend": "cuda" if i == 0 else "neuron",
                        "seeds": list(range(n))} for i, name in enumerate(legs)}}
    if sequential:
        cfg["sequential"] = sequential
    return cfg


def verdict(values: dict[str, np.ndarray], n: int, broken: dict[str, dict[int, str]] | None = None,
            **config: Any) -> dict:
    """`evaluate()` on the first n seeds of each leg (the first leg is the baseline); `broken`:
    leg -> {seed: "diverged" | "crashed"} for the jobs that broke instead of completing."""
    legs = list(values)
    jobs = []
    for leg in legs:
        for s in range(n):
            state = ((broken or {}).get(leg) or {}).get(s)
            jobs.append(_job(leg, s, None, state) if state else _job(leg, s, float(values[leg][s])))
    return evaluate(_config(legs, n, **config), jobs)


def _paired(rng, n: int, diffs: np.ndarray) -> dict[str, np.ndarray]:
    """Baseline values with a per-seed effect, and a leg = baseline + the per-seed differences."""
    base = LEVEL + rng.normal(0.0, 1.0, n)
    return {"base": base, "leg": base + diffs}


# --- replicates in chunks, over processes ------------------------------------------------------
def _call(fn, cond, reps: int, entropy: tuple[int, ...]) -> Counter:
    return fn(cond, reps, np.random.default_rng(list(entropy)))


def _runner(workers: int):
    if workers <= 1:
        return None
    return mp.get_context("fork").Pool(workers)


class Runner:
    """Splits each condition's replicates into CHUNKS seeded chunks and maps them over a pool."""

    def __init__(self, seed: int, workers: int):
        self.seed, self.workers = seed, workers
        self.pool = _runner(workers)

    def run(self, tag: str, fn, conditions: list, reps: int) -> list[Counter]:
        tasks = []
        sizes = [reps // CHUNKS + (1 if j < reps % CHUNKS else 0) for j in range(CHUNKS)]
        code = zlib.crc32(tag.encode())
        for i, cond in enumerate(conditions):
            tasks += [(fn, cond, k, (self.seed, code, i, j)) for j, k in enumerate(sizes) if k]
        out = self.pool.starmap(_call, tasks) if self.pool else [_call(*t) for t in tasks]
        merged = [Counter() for _ in conditions]
        for task, c in zip(tasks, out, strict=True):
            merged[task[3][2]].update(c)
        return merged

    def close(self) -> None:
        if self.pool:
            self.pool.close()
            self.pool.join()


# --- the table --------------------------------------------------------------------------------
class Table:
    def __init__(self):
        self.ok = True
        self.missed: list[str] = []

    @staticmethod
    def header() -> None:
        print(f"   {'condition':<72} {'estimate':>8} {'MC SE':>7}  {'goal (+/- 2 SE at goal)':<26} status")

    def row(self, label: str, p: float, reps: int, goal: tuple[str, float] | None = None, note: str = "") -> None:
        se = math.sqrt(max(p * (1 - p), 0.0) / reps) if reps else float("nan")
        text, status = "-", note or ""
        if goal:
            op, g = goal
            tol = 2 * math.sqrt(g * (1 - g) / reps)
            met = p <= g + tol if op == "<=" else p >= g - tol
            text = f"{op} {g:.3f} {'+' if op == '<=' else '-'} {tol:.4f}"
            status = ("met" if met else "MISSED") + (f" ({note})" if note else "")
            if not met:
                self.ok = False
                self.missed.append(label)
        print(f"   {label:<72} {p:>8.4f} {se:>7.4f}  {text:<26} {status}")


# --- a. re-decision after an inconclusive first look -------------------------------------------
def _naive(cond, reps: int, rng) -> Counter:
    ratio, delta = cond
    out: Counter = Counter()
    for _ in range(reps):
        v = _paired(rng, NAIVE_CAP, rng.normal(delta, SIGMA, NAIVE_CAP))
        first = verdict(v, 3, margin=ratio)
        out["first_" + first["verdict"]] += 1
        final = first["verdict"]
        if final == "inconclusive":
            rec = (first.get("recommendation") or {}).get("seeds")
            if rec is None:
                out["no_recommendation"] += 1
            n2 = min(NAIVE_CAP, rec or NAIVE_CAP)
            if n2 > 3:
                out["second_look"] += 1
                out["seeds_second"] += n2
                final = verdict(v, n2, margin=ratio)["verdict"]
        out[final] += 1
    return out


def cell_a(runner: Runner, reps: int, table: Table) -> None:
    print("4a. Naive re-decision after inconclusive (what the tool must not allow): decide at 3 seeds; if")
    print(f"    inconclusive, add seeds up to evaluate()'s recommendation.seeds (at most {NAIVE_CAP}; none given: "
          f"{NAIVE_CAP}), reusing")
    print("    the first 3, and decide again at full alpha. No goal: it shows why a second look must be counted")
    print("    (evaluate() alone cannot see an earlier look: refusing one is the caller's job)")
    conds = [(r, d * r) for r in (1.0, 3.0) for d in (1.0, 0.0)]
    res = runner.run("a", _naive, conds, reps)
    table.header()
    for (ratio, delta), c in zip(conds, res, strict=True):
        at = "d = margin" if delta else "d = 0"
        looks = c["second_look"]
        tail = (f"; 2nd look in {looks / reps:.0%}, mean {c['seeds_second'] / max(looks, 1):.1f} seeds"
                + (f", no recommendation {c['no_recommendation'] / reps:.0%}" if c["no_recommendation"] else ""))
        if delta:
            table.row(f"m/sigma {ratio:g}: P(pass | {at}) at look 1 alone", c["first_pass"] / reps, reps)
            table.row(f"m/sigma {ratio:g}: P(pass | {at}) naive two-look", c["pass"] / reps, reps,
                      note="vs alpha 0.05" + tail)
            table.row(f"m/sigma {ratio:g}: P(fail | {at}) naive two-look (fail boundary)", c["fail"] / reps, reps,
                      note="vs alpha 0.05")
        else:
            table.row(f"m/sigma {ratio:g}: P(fail | {at}) naive two-look", c["fail"] / reps, reps, note=tail[2:])
            table.row(f"m/sigma {ratio:g}: P(pass | {at}) naive two-look (power)", c["pass"] / reps, reps)
    print()


# --- b. breakage --------------------------------------------------------------------------------
def _breakage(cond, reps: int, rng) -> Counter:
    n, rate, pattern = cond
    out: Counter = Counter()
    for _ in range(reps):
        v = _paired(rng, n, rng.normal(0.0, SIGMA, n))
        broken: dict[str, dict[int, str]] = {}
        for leg in (["base", "leg"] if pattern == "every leg" else ["base"]):
            hit = np.flatnonzero(rng.random(n) < rate)
            kinds = rng.random(hit.size) < 0.5
            broken[leg] = {int(s): ("diverged" if k else "crashed") for s, k in zip(hit, kinds, strict=True)}
        ev = verdict(v, n, broken)
        out[ev["verdict"]] += 1
        out["any_broken"] += any(broken.values())
        stab = [c for c in ev["checks"] if c["name"].startswith("stability:")]
        out["stability_failed"] += any(c["status"] == "failed" for c in stab)
        out["stability_undecided"] += any(c["status"] == "inconclusive" for c in stab)
    return out


def cell_b(runner: Runner, reps: int, table: Table) -> None:
    print("4b. Breakage: each job diverges or crashes (half each) independently at the rate given, on every leg")
    print("    or on the baseline only; 2 legs, true difference 0; evaluate(). Goal: P(verdict fail) <= alpha")
    conds = [(n, rate, pattern) for n in (5, 10) for rate, pattern in
             ((0.0, "nowhere"), (0.01, "every leg"), (0.03, "every leg"), (0.01, "baseline only"),
              (0.03, "baseline only"))]
    res = runner.run("b", _breakage, conds, reps)
    table.header()
    for (n, rate, pattern), c in zip(conds, res, strict=True):
        where = f"{rate:.0%} on {pattern}" if rate else "no breakage (reference)"
        table.row(f"{n:>2} seeds, {where}: P(fail)", c["fail"] / reps, reps, ("<=", ALPHA),
                  note=f"stability failed {c['stability_failed'] / reps:.4f}")
        table.row(f"{n:>2} seeds, {where}: P(inconclusive)", c["inconclusive"] / reps, reps,
                  note=f"a stability check undecided {c['stability_undecided'] / reps:.4f}; "
                       f"any job broke {c['any_broken'] / reps:.3f}")
    print()


# --- c. skewed and heavy-tailed per-seed differences ---------------------------------------------
def draw_differences(kind: str, rng, size, mean: float) -> np.ndarray:
    """Per-seed differences with the given mean. lognormals and t3: SD sigma (1); mixture: +5 sigma with
    probability 0.1, else N(0, 0.5) (SD 1.57), shifted; every shape's worse tail is positive."""
    if kind == "normal":
        return rng.normal(mean, SIGMA, size)
    if kind == "lognormal_left":  # the mirror of "lognormal": its long tail on the better side
        return 2 * mean - draw_differences("lognormal", rng, size, mean)
    if kind.startswith("lognormal"):
        s = 1.0 if kind == "lognormal" else 0.5
        x = np.exp(s * rng.standard_normal(size))
        return (x - math.exp(s * s / 2)) / math.sqrt((math.exp(s * s) - 1) * math.exp(s * s)) * SIGMA + mean
    if kind == "mixture":
        x = np.where(rng.random(size) < 0.1, 5.0 * SIGMA, rng.normal(0.0, 0.5 * SIGMA, size))
        return x - 0.5 * SIGMA + mean
    if kind == "t3":
        return rng.standard_t(3, size) / math.sqrt(3.0) * SIGMA + mean
    raise ValueError(kind)


def _shapes(cond, reps: int, rng) -> Counter:
    kind, n = cond
    out: Counter = Counter()
    for _ in range(reps):
        ev = verdict(_paired(rng, n, draw_differences(kind, rng, n, MARGIN)), n)
        out[ev["verdict"]] += 1
    return out


SHAPES = (("normal", "normal (reference)"), ("lognormal_half", "shifted lognormal(0, 0.5), SD 1, right tail"),
          ("lognormal", "shifted lognormal(0, 1), SD 1, right tail"),
          ("mixture", "mixture: +5 w.p. 0.1 else N(0, 0.5), SD 1.57"), ("t3", "t, 3 df, SD 1"),
          ("lognormal_left", "mirrored lognormal(0, 1), SD 1, left tail"))


def cell_c(runner: Runner, reps: int, table: Table) -> None:
    print("4c. Skewed and heavy-tailed per-seed differences whose MEAN is the margin; evaluate(), one decision at")
    print("    alpha (the skew guard of verdict/skew.py in effect). Goal: P(pass) <= alpha and P(fail) <= alpha.")
    print("    Expected to miss for the long-tailed shapes at few seeds: no test holds alpha for every shape with")
    print("    power above alpha (Bahadur & Savage 1956); the guard keeps each rate at or below the t interval's.")
    check = _sample_mean(draw_differences, reps)
    print(f"    (each shape's mean over 10^6 draws, to check it sits on the margin {MARGIN:g}: {check})")
    conds = [(kind, n) for kind, _ in SHAPES for n in (3, 5, 10, 20)]
    res = runner.run("c", _shapes, conds, reps)
    table.header()
    names = dict(SHAPES)
    for (kind, n), c in zip(conds, res, strict=True):
        # A fail claims a difference beyond the margin: at a mean ON the margin it is an error too.
        table.row(f"{names[kind]}, {n:>2} seeds: P(pass)", c["pass"] / reps, reps, ("<=", ALPHA))
        table.row(f"{names[kind]}, {n:>2} seeds: P(fail)", c["fail"] / reps, reps, ("<=", ALPHA))
    print()


def _sample_mean(draw, reps: int) -> str:
    rng = np.random.default_rng(7)
    return ", ".join(f"{k} {float(draw(k, rng, 1_000_000, MARGIN).mean()):.3f}" for k, _ in SHAPES)


# --- d. quantised metrics ------------------------------------------------------------------------
EXAMPLES = 200
STEP = 1.0 / EXAMPLES
Q_MARGIN = 2 * STEP  # accuracy: a margin of 1 point (2 examples of 200)


def _quantised(cond, reps: int, rng) -> Counter:
    """Accuracy on EXAMPLES examples: each run's true accuracy (a shared seed effect, then each leg's
    own noise of SD spread / sqrt 2, so a per-seed difference has SD `spread` before rounding)
    rounded to k / EXAMPLES; the leg is worse (lower) by `delta`."""
    n, spread, delta, resolution = cond
    out: Counter = Counter()
    for _ in range(reps):
        seed_acc = 0.85 + rng.normal(0.0, 0.02, n)
        base = np.round((seed_acc + rng.normal(0.0, spread / math.sqrt(2), n)) * EXAMPLES).astype(int)
        leg = np.round((seed_acc - delta + rng.normal(0.0, spread / math.sqrt(2), n)) * EXAMPLES).astype(int)
        r = stats.compare({s: int(k) / EXAMPLES for s, k in enumerate(base)},
                          {s: int(k) / EXAMPLES for s, k in enumerate(leg)},
                          margin=Q_MARGIN, alpha=ALPHA, direction="maximize", resolution=resolution)
        out[r["outcome"]] += 1
        out["floored"] += bool(r.get("sd_floored"))
    return out


def cell_d(runner: Runner, reps: int, table: Table) -> None:
    print(f"4d. Quantised metric: accuracy on {EXAMPLES} examples (k/{EXAMPLES}), margin {Q_MARGIN:g} (2 examples), "
          "maximize; stats.compare with")
    print(f"    parity.resolution = 1/{EXAMPLES} and without (the step then read off the values' decimals). Spread: "
          "SD of a per-seed")
    print("    difference before rounding, in steps. Goals: P(pass | d = margin) <= alpha, "
          "P(fail | identical) <= alpha")
    conds = [(n, spread * STEP, delta, res) for n in (3, 5, 10) for spread in (0.0, 0.5, 1.0)
             for delta in (0.0, Q_MARGIN) for res in (STEP, None)]
    res = runner.run("d", _quantised, conds, reps)
    table.header()
    for (n, spread, delta, resolution), c in zip(conds, res, strict=True):
        rtxt = "resolution 1/200" if resolution else "no resolution   "
        label = f"{n:>2} seeds, spread {spread / STEP:.1f} step, {rtxt}: "
        floored = f"SD floored in {c['floored'] / reps:.0%}"
        if delta:
            table.row(label + "P(pass | d = margin)", c["pass"] / reps, reps, ("<=", ALPHA), note=floored)
        else:
            table.row(label + "P(fail | identical)", c["fail"] / reps, reps, ("<=", ALPHA),
                      note=f"P(pass) {c['pass'] / reps:.3f}; {floored}")
    print()


# --- e. three legs against one baseline -----------------------------------------------------------
LEGS3 = ("base", "leg1", "leg2", "leg3")


def _multi(cond, reps: int, rng) -> Counter:
    """Three legs sharing the baseline's seeds: value = seed effect + own noise of SD sigma / sqrt 2,
    so each leg's per-seed difference has SD sigma and two legs' differences correlate 0.5."""
    n, deltas = cond
    out: Counter = Counter()
    for _ in range(reps):
        seed_effect = LEVEL + rng.normal(0.0, 1.0, n)
        values = {"base": seed_effect + rng.normal(0.0, SIGMA / math.sqrt(2), n)}
        for leg, d in zip(LEGS3[1:], deltas, strict=True):
            values[leg] = seed_effect + d + rng.normal(0.0, SIGMA / math.sqrt(2), n)
        ev = verdict(values, n)
        out[ev["verdict"]] += 1
        parity = [c for c in ev["checks"] if c["name"].startswith("parity:")]
        out["fail_alone"] += any(c.get("outcome") == stats.FAIL or c.get("holm") for c in parity)
        out["legs_passed"] += sum(c["status"] == "passed" for c in parity)
    return out


def cell_e(runner: Runner, reps: int, table: Table) -> None:
    n = stats.seeds_for_power(SIGMA, MARGIN, ALPHA, 0.8, paired=True)
    # What the evaluation and `bakeoff plan` recommend for 3 legs: each at 1 - 0.2/3, fails at alpha/3.
    joint = stats.seeds_for_power(SIGMA, MARGIN, ALPHA, 1 - 0.2 / 3, paired=True, fail_alpha=ALPHA / 3)
    print("4e. Three legs against one baseline (paired, shared baseline seeds; legs' differences correlate 0.5) at "
          f"the {n} seeds")
    print("    stats.seeds_for_power gives for power 0.8 at sigma known; evaluate() on a 4-leg config. (And at "
          f"{joint}, the seeds")
    print("    for per-leg power 1 - 0.2/3 and fails at alpha/3, what the tool recommends for 3 legs: the goals "
          "are there.)")
    m = MARGIN
    conds = [(n, (0.0, 0.0, 0.0)), (n, (2 * m, 0.0, 0.0)), (n, (m, m, m)), (n, (m, -m, m)),
             (joint, (0.0, 0.0, 0.0)), (joint, (2 * m, 0.0, 0.0))]
    res = runner.run("e", _multi, conds, reps)
    table.header()
    same, worse, edge, mixed, same_joint, worse_joint = res
    table.row(f"{n} seeds, all legs d = 0: P(verdict pass)", same["pass"] / reps, reps,
              note=f"no goal: one leg's seeds; legs passed {same['legs_passed'] / reps / 3:.3f} each")
    table.row(f"{n} seeds, all legs d = 0: P(verdict fail)", same["fail"] / reps, reps, ("<=", ALPHA))
    table.row(f"{n} seeds, one leg d = 2 margin, two d = 0: P(verdict fail)", worse["fail"] / reps, reps,
              note="no goal: one leg's seeds")
    table.row(f"{n} seeds, all legs d = +margin: P(verdict fail)", edge["fail"] / reps, reps, ("<=", ALPHA),
              note=f"some leg failed before Holm {edge['fail_alone'] / reps:.4f}")
    table.row(f"{n} seeds, legs d = +m, -m, +m: P(verdict fail)", mixed["fail"] / reps, reps, ("<=", ALPHA),
              note=f"some leg failed before Holm {mixed['fail_alone'] / reps:.4f}")
    table.row(f"{joint} seeds, all legs d = 0: P(verdict pass)", same_joint["pass"] / reps, reps, (">=", 0.8),
              note="the seeds recommended for 3 legs")
    table.row(f"{joint} seeds, one leg d = 2 margin, two d = 0: P(verdict fail)", worse_joint["fail"] / reps, reps,
              (">=", 0.8), note="the seeds recommended for 3 legs")
    print()


# --- f. the sequential loop as shipped (--until-decided) -------------------------------------------
def shipped_design() -> dict[str, Any]:
    """The design `bakeoff run --until-decided` runs with the spec's default seeds and no flags."""
    from bakeoff.pipelines.advice import rounds as loop
    from bakeoff.pipelines.spec.model import BakeoffSpec

    first = int(BakeoffSpec.model_fields["seeds"].default)
    cap = loop.default_cap(first)
    looks = [first]
    while looks[-1] < cap:
        looks.append(loop.next_size(looks[-1], first, cap))
    assert looks == seq.schedule(first, cap, first), "the loop's rounds are not sequential.schedule's"
    levels = [seq.from_config({"looks": looks[:k], "max_seeds": cap, "spending": seq.POCOCK}, ALPHA)
              ["nominal_alpha"][-1] for k in range(1, len(looks) + 1)]
    return {"first": first, "cap": cap, "looks": looks, "levels": levels, "spending": seq.POCOCK}


def shipped_bounds(x: np.ndarray, a: float) -> tuple[np.ndarray, np.ndarray]:
    """Each row's interval at one-sided level `a` as stats.paired_interval builds it: the t interval, and
    where the row's skewness is visible (verdict/skew.py) on each side the wider of it and Hall's bound."""
    from bakeoff_runtime.verdict import skew

    n = x.shape[1]
    mean, sd = x.mean(1), x.std(1, ddof=1)
    t_crit = stats.t_quantile(1 - a, n - 1)
    lo, hi = mean - t_crit * sd / math.sqrt(n), mean + t_crit * sd / math.sqrt(n)
    if n < skew.MIN_PAIRS:
        return lo, hi
    m2 = ((x - mean[:, None]) ** 2).mean(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        g = np.where(m2 > 0, ((x - mean[:, None]) ** 3).mean(1) / m2 ** 1.5, 0.0)
    g = np.where(np.abs(g) > skew.VISIBLE_Z * skew.sd_under_normality(n), g, 0.0)
    y = t_crit / math.sqrt(n)

    def h_inverse(v: float) -> np.ndarray:
        b = v - g / (6 * n)
        safe = np.where(g == 0, 1.0, g)
        return np.where(g == 0, b, (3 / safe) * (np.cbrt(1 + g * b) - 1))

    return np.minimum(lo, mean - sd * h_inverse(y)), np.maximum(hi, mean - sd * h_inverse(-y))


def sequential_vectorised(d: np.ndarray, design: dict, margin: float) -> tuple[np.ndarray, np.ndarray]:
    """Outcome and seeds used of each row of per-seed differences under the shipped per-look rule: pass on
    the look's interval; fail on the interval at half the look's level (Holm's first step over one leg's
    parity and breakage claims, multiplicity.py, when nothing broke)."""
    reps = d.shape[0]
    state = np.full(reps, stats.INCONCLUSIVE, dtype=object)
    used = np.full(reps, design["looks"][-1])
    live = np.ones(reps, dtype=bool)
    for n, a in zip(design["looks"], design["levels"], strict=True):
        x = d[live, :n]
        lo, hi = shipped_bounds(x, a)
        f_lo, f_hi = shipped_bounds(x, a / 2)
        passed = stats.decide(lo, hi, margin) == stats.PASS
        failed = stats.decide(f_lo, f_hi, margin) == stats.FAIL
        out = np.where(passed, stats.PASS, np.where(failed, stats.FAIL, stats.INCONCLUSIVE))
        idx = np.flatnonzero(live)
        decided = out != stats.INCONCLUSIVE
        state[idx[decided]] = out[decided]
        used[idx[decided]] = n
        live[idx[decided]] = False
    return state, used


def sequential_shipped(base: np.ndarray, leg: np.ndarray, design: dict, margin: float) -> tuple[str, int]:
    """The shipped loop on one bake-off: evaluate() with the design's `sequential` block at each look."""
    looks = []
    for n in design["looks"]:
        looks.append(n)
        block = {"looks": list(looks), "max_seeds": design["cap"], "spending": design["spending"]}
        v = verdict({"base": base, "leg": leg}, n, margin=margin, sequential=block)["verdict"]
        if v in (stats.PASS, stats.FAIL):
            return v, n
    return stats.INCONCLUSIVE, looks[-1]


def _seq_block(cond, reps: int, rng) -> Counter:
    ratio, delta, design, check = cond
    d = rng.normal(delta, SIGMA, (reps, design["cap"]))
    state, used = sequential_vectorised(d, design, ratio)
    out: Counter = Counter({k: int((state == k).sum()) for k in (stats.PASS, stats.FAIL, stats.INCONCLUSIVE)})
    out["seeds"] = int(used.sum())
    for i in range(min(check, reps)):
        base = LEVEL + rng.normal(0.0, 1.0, design["cap"])
        got = sequential_shipped(base, base + d[i], design, ratio)
        out["checked"] += 1
        out["disagree"] += got != (state[i], int(used[i]))
        out["ship_" + got[0]] += 1
        out["vec_" + str(state[i])] += 1
    return out


def cell_f(runner: Runner, reps: int, table: Table) -> None:
    design = shipped_design()
    big = 25 * reps
    print(f"4f. --until-decided as shipped: first round {design['first']} seeds (the spec default), +{design['first']} "
          f"a round, cap {design['cap']}, {design['spending']} spending,")
    print(f"    no futility stop; looks {design['looks']} at one-sided levels "
          f"{', '.join(f'{a:.4f}' for a in design['levels'])} (sequential.from_config).")
    print(f"    {big} replicates a condition, the per-look rule vectorised; goal: P(pass | d = margin) <= alpha")
    conds = [(ratio, mult * ratio, design, 10) for ratio in (1.0, 3.0) for mult in (1.0, -1.0, 0.0, 2.0)]
    res = runner.run("f", _seq_block, conds, big)
    table.header()
    checked = disagree = 0
    tally = []
    for (ratio, delta, _, _), c in zip(conds, res, strict=True):
        checked, disagree = checked + c["checked"], disagree + c["disagree"]
        if c["disagree"]:
            tally.append(f"m/sigma {ratio:g} d = {delta / ratio:+g} m: shipped pass/fail/inconclusive "
                         f"{c['ship_pass']}/{c['ship_fail']}/{c['ship_inconclusive']}, vectorised "
                         f"{c['vec_pass']}/{c['vec_fail']}/{c['vec_inconclusive']} of {c['checked']}")
        lab = f"m/sigma {ratio:g}, d = {delta / ratio:+g} margin"
        seeds = f"mean seeds {c['seeds'] / big:.2f}"
        if abs(delta) == ratio:
            table.row(f"{lab}: P(pass)", c["pass"] / big, big, ("<=", ALPHA), note=seeds)
            table.row(f"{lab}: P(fail)", c["fail"] / big, big, note="the fail side's boundary; vs alpha")
        elif delta == 0:
            table.row(f"{lab}: P(pass)", c["pass"] / big, big, note=seeds)
            table.row(f"{lab}: P(fail)", c["fail"] / big, big, ("<=", ALPHA))
        else:
            table.row(f"{lab}: P(fail)", c["fail"] / big, big, note=seeds)
    ship = seq.simulate(design["first"], design["cap"], SIGMA, MARGIN, MARGIN, ALPHA, spending=design["spending"],
                        reps=big, seed=runner.seed)
    print(f"    cross-check: sequential.simulate (the shipped Monte Carlo, its own draws) at m/sigma 1, d = margin: "
          f"P(pass) {ship['pass']:.4f}, P(fail) {ship['fail']:.4f}")
    print(f"    the vectorised rule was checked against the shipped loop (evaluate() with the sequential block, look "
          f"by look) on {checked} replicates: {disagree} disagreed")
    for line in tally:
        print(f"      {line}")
    if disagree:
        print("    (evaluate() now decides more than the per-look interval rule: the figures above are then those of")
        print("    the interval rule alone, not of the shipped loop)")
        table.ok = False
        table.missed.append("4f: the vectorised rule disagrees with the shipped loop")
    print()


# --- g. the doomed-leg rule ----------------------------------------------------------------------
EVALS = 10
RAMP = np.linspace(0.3, 1.0, EVALS)  # the gap opens over training (as benchmarks/cost_of_verdict.py has it)


def doom_curves(rng, reps: int, n: int, delta: float, share: float) -> np.ndarray:
    """Paired gaps (leg - baseline) at each eval: ramp x (delta + a seed effect) + the eval's own noise.
    The end-of-training gap has SD sigma; `share` of its variance is the seed's (common to its evals)."""
    seed = rng.normal(0.0, SIGMA * math.sqrt(share), (reps, n, 1))
    own = rng.normal(0.0, SIGMA * math.sqrt(1 - share), (reps, n, EVALS))
    return RAMP * (delta + seed) + own


def doomed_vectorised(gaps: np.ndarray, margin: float, tail: float, min_pairs: int) -> np.ndarray:
    """The seed each leg is stopped after (-1: never): seed s is judged against the SD of the end-of-training
    gaps of seeds 0..s-1 (seed-major order), once there are `min_pairs`, by `sequential.doomed`'s rule."""
    reps, n, _ = gaps.shape
    stop = np.full(reps, -1)
    for s in range(min_pairs, n):
        sd = gaps[:, :s, -1].std(1, ddof=1)
        bar = margin + stats.t_quantile(1 - tail, s - 1) * sd
        hit = (gaps[:, s, -2] > bar) & (gaps[:, s, -1] > bar) & (stop < 0)
        stop[hit] = s
    return stop


def doomed_shipped(gaps: np.ndarray, margin: float, root: Path) -> int:
    """DoomWatch (pipelines/local/doomed.py) fed one leg's curves as finished job directories, seed-major."""
    from bakeoff.pipelines.local.doomed import DoomWatch

    spec = SimpleNamespace(parity=SimpleNamespace(metric="val_loss", direction="minimize", margin=margin,
                                                  margin_type="absolute"), baseline="base")
    watch = DoomWatch(spec, planned_seeds=gaps.shape[0])
    base_curve = np.full(EVALS, 2.0)
    for s in range(gaps.shape[0]):
        for leg, curve in (("base", base_curve), ("leg", base_curve + gaps[s])):
            d = root / f"{leg}-s{s}" / "opt" / "ml" / "model"
            d.mkdir(parents=True)
            (d / "summary.json").write_text(json.dumps({"status": "completed", "leg": leg, "seed": s}))
            (d / "metrics.jsonl").write_text("".join(json.dumps({"kind": "eval", "step": 10 * (e + 1),
                                                                "val_loss": float(v)}) + "\n"
                                                     for e, v in enumerate(curve)))
            if watch.finished(leg, s, d.parent.parent.parent):
                return s
    return -1


def _doom(cond, reps: int, rng) -> Counter:
    n, mult, share, tail, min_pairs, check = cond
    gaps = doom_curves(rng, reps, n, mult * MARGIN, share)
    stop = doomed_vectorised(gaps, MARGIN, tail, min_pairs)
    out: Counter = Counter({"stopped": int((stop >= 0).sum())})
    # the check: every replicate the rule stopped (up to `check`) and as many it did not
    picks = list(np.flatnonzero(stop >= 0)[:check]) + list(np.flatnonzero(stop < 0)[:max(1, check // 2)])
    fast = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory(dir=fast) as tmp:
        for k, i in enumerate(picks):
            got = doomed_shipped(gaps[i], MARGIN, Path(tmp) / str(k))
            out["checked"] += 1
            out["disagree"] += got != int(stop[i])
    return out


def cell_g(runner: Runner, reps: int, table: Table) -> None:
    from bakeoff.pipelines.local import doomed as watch

    min_pairs = watch.MIN_NOISE_PAIRS
    big = 10 * reps
    print("4g. The doomed-leg rule as the local executor runs it: after each seed, its last two evals against "
          "margin +")
    print(f"    t_(1 - tail, df) x the SD of the end-of-training gaps of the earlier seeds (>= {min_pairs} of them, "
          "the judged one left out);")
    print(f"    tail per seed = min({watch.NOISE_TAIL}, {watch.FALSE_STOP_BUDGET} / the seeds the run may judge) "
          "(doomed.stop_tail)")
    print(f"    {EVALS} evals a job, the gap ramps from 0.3 to 1 of its final value; `seed share`: the fraction of the "
          "final gap's")
    print(f"    variance that is the seed's (common to its evals), the rest each eval's own. {big} legs a condition. "
          "Goal: false stops <= 1% at d = margin")
    conds = [(n, mult, share, watch.stop_tail(n), min_pairs, 3) for n in (5, 12, 20, 40)
             for share in (1.0, 0.5, 0.0) for mult in (0.8, 1.0)]
    res = runner.run("g", _doom, conds, big)
    table.header()
    checked = disagree = 0
    for (n, mult, share, *_), c in zip(conds, res, strict=True):
        checked, disagree = checked + c["checked"], disagree + c["disagree"]
        cap = " (the --until-decided cap)" if n == 12 else ""
        label = f"{n:>2} seeds{cap}, seed share {share:.1f}: P(stop | d = {mult:g} m)"
        table.row(label, c["stopped"] / big, big, ("<=", 0.01) if mult == 1.0 else None)
    print(f"    the vectorised rule was checked against DoomWatch on {checked} legs (stopped ones first): "
          f"{disagree} disagreed")
    if disagree:
        table.ok = False
        table.missed.append("4g: the vectorised rule disagrees with DoomWatch")
    print()


CELLS = {"a": cell_a, "b": cell_b, "c": cell_c, "d": cell_d, "e": cell_e, "f": cell_f, "g": cell_g}
SCALE = {"d": 5}


def run_cells(reps: int = 2000, seed: int = 2026, workers: int = WORKERS, only: str = "abcdefg") -> bool:
    print(f"4. Cells beyond the grid ({reps} replicates a condition through evaluate(); alpha {ALPHA}, margin "
          f"{MARGIN:g} sigma unless stated; seed {seed})")
    print()
    table = Table()
    runner = Runner(seed, workers)
    try:
        for key in only:
            CELLS[key](runner, reps * SCALE.get(key, 1), table)
    finally:
        runner.close()
    print("goals of section 4:", "met" if table.ok else "MISSED: " + "; ".join(table.missed))
    return table.ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000, help="replicates per condition through evaluate()")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--workers", type=int, default=min(WORKERS, len(os.sched_getaffinity(0))))
    ap.add_argument("--only", default="abcdefg", help="the cells to run, e.g. 'bf'")
    args = ap.parse_args()
    return 0 if run_cells(args.reps, args.seed, args.workers, args.only) else 1


if __name__ == "__main__":
    sys.exit(main())
