"""Deciding a question again after `inconclusive`, the way the tool advises: error rates and power.

    .venv/bin/python benchmarks/verdict_attempts.py [--reps 2000] [--seed 2026] [--workers 2] [--cap 60]

Each replicate is one user with one question, through the shipped code path:

1. `bakeoff.pipelines.local.questions.begin` opens attempt 1 (its own record under a temporary
   BAKEOFF_STATE_DIR); `evaluate()` decides 3 seeds per leg (stage 1 of the default two-stage design);
   `questions.record` keeps its figures.
2. If the verdict is inconclusive and its recommendation's next step is "stage 2", the user runs the
   recommended fresh seeds (at most `--cap`) in a new --out: `questions.begin` with those jobs opens
   attempt 2 as stage 2 and hands it stage 1's figures; `evaluate()` decides the combination.
3. If that is inconclusive too, the user tries a third time on fresh seeds in yet another --out, as
   the naive loop would: `questions.begin` must refuse it (without --fresh-start). The share refused is
   printed; a refused attempt leaves the verdict inconclusive.

A second table (no goal) shows why `--until-decided` does not size its cap from a question's own first
round: with the cap from the first round's spread (bakeoff.pipelines.advice.rounds.cap_for_power, computed by the
shipped code on a grid of spreads), the design's looks and levels, and the per-look rule of
verdict_oc_cells.sequential_vectorised (checked there against evaluate()), the power is there but the
false-pass rate rises above alpha. The loop keeps its cap and advises the sized one for the next attempt.

For comparison, the naive loop the issue measured (decide at full alpha; if inconclusive, decide again
on fresh seeds at full alpha, up to three times, nobody counting) runs on the same draws with the
fixed design (`parity.design: fixed`).

Per-seed paired differences are normal with SD sigma (the t interval's assumption); margin/sigma 1 and
3; true difference 0 (identical legs) and the margin. Goals, as the issue states them: P(pass | d =
margin) <= alpha + 2 SE, P(fail | identical legs) <= alpha, P(fail | d = margin) <= alpha (a fail claims
a difference beyond the margin), and the power of stage 2 at the recommended seeds >= 80% (conditional
on reaching it, where the recommendation was not capped). SE = sqrt(p (1 - p) / reps).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent / "entrypoints"))
sys.path.insert(2, str(HERE.parent))

from verdict_oc_cells import LEVEL, Runner, Table, _config, _job, sequential_vectorised  # noqa: E402

from bakeoff.pipelines.errors import SpecError  # noqa: E402
from bakeoff.pipelines.local import questions  # noqa: E402
from bakeoff_runtime.contract import STATE_DIR_ENV  # noqa: E402
from bakeoff_runtime.verdict.evaluation import evaluate  # noqa: E402

ALPHA = 0.05
N1 = 3


def _decide(base: np.ndarray, leg: np.ndarray, seeds: list[int], margin: float, design: str,
            attempt: dict | None = None) -> dict:
    cfg = _config(["base", "leg"], len(seeds), margin=margin)
    cfg["parity"]["design"] = design
    for leg_cfg in cfg["legs"].values():
        leg_cfg["seeds"] = list(seeds)
    if attempt is not None:
        cfg["attempt"] = attempt
    jobs = [_job("base", s, float(b)) for s, b in zip(seeds, base, strict=True)]
    jobs += [_job("leg", s, float(v)) for s, v in zip(seeds, leg, strict=True)]
    return evaluate(cfg, jobs)


def _draw(rng, n: int, delta: float) -> tuple[np.ndarray, np.ndarray]:
    base = LEVEL + rng.normal(0.0, 1.0, n)
    return base, base + rng.normal(delta, 1.0, n)


def _jobs(tag: str, seeds: list[int]) -> dict[str, str]:
    return {f"Train-{leg}-s{s}": f"{tag}-{leg}-{s}" for leg in ("base", "leg") for s in seeds}


def _advised(cond, reps: int, rng) -> Counter:
    ratio, delta, cap = cond
    out: Counter = Counter()
    with tempfile.TemporaryDirectory() as state:
        os.environ[STATE_DIR_ENV] = state
        for r in range(reps):
            q = questions.Question(key=f"q{r}-{rng.integers(1 << 62)}", about={"benchmark": True})
            seeds = list(range(N1))
            a1 = questions.begin(q, Path(state) / f"out{r}-1", _jobs("a1", seeds), seeds, "two_stage")
            ev = _decide(*_draw(rng, N1, delta), seeds, ratio, "two_stage", dict(a1))
            questions.record(q, a1, ev)
            verdict = ev["verdict"]
            out["stage1_" + verdict] += 1
            rec = ev.get("recommendation") or {}
            if verdict == "inconclusive" and rec.get("next") == "stage 2" and rec.get("seeds"):
                n2 = int(rec["seeds"])
                capped = n2 > cap
                n2 = min(n2, cap)
                fresh = list(range(N1, N1 + n2))
                a2 = questions.begin(q, Path(state) / f"out{r}-2", _jobs("a2", fresh), fresh, "two_stage")
                assert a2["stage"] == 2, a2
                ev2 = _decide(*_draw(rng, n2, delta), fresh, ratio, "two_stage", dict(a2))
                questions.record(q, a2, ev2)
                verdict = ev2["verdict"]
                out["stage2"] += 1
                out["stage2_seeds"] += n2
                if not capped:
                    out["stage2_uncapped"] += 1
                    out["stage2_uncapped_" + verdict] += 1
                if verdict == "inconclusive":
                    third = list(range(N1 + n2, N1 + n2 + N1))
                    try:
                        questions.begin(q, Path(state) / f"out{r}-3", _jobs("a3", third), third, "two_stage")
                        out["third_allowed"] += 1
                    except SpecError:
                        out["third_refused"] += 1
            elif verdict == "inconclusive":
                out["no_stage2"] += 1
            out[verdict] += 1
    return out


def _naive(cond, reps: int, rng) -> Counter:
    """Decide at full alpha; if inconclusive, decide again on fresh seeds (the count the fixed design's
    recommendation gives, at most the cap), up to three attempts, none counted."""
    ratio, delta, cap = cond
    out: Counter = Counter()
    for _ in range(reps):
        n, verdict = N1, "inconclusive"
        for attempt in range(3):
            ev = _decide(*_draw(rng, n, delta), list(range(n)), ratio, "fixed")
            verdict = ev["verdict"]
            if verdict != "inconclusive":
                break
            n = min(cap, max(N1, int((ev.get("recommendation") or {}).get("seeds") or N1)))
            out[f"after_{attempt + 1}"] += 1
        out[verdict] += 1
    return out


# --- --until-decided with its cap sized for the power (pipelines/advice/rounds.cap_for_power) ---------------
SPREAD_GRID = np.geomspace(0.05, 4.0, 48)  # first-round SDs (sigma = 1) at which the shipped cap is computed


def _cap_table(first: int, ratio: float) -> dict[float, int]:
    from bakeoff.pipelines.advice import rounds

    out = {}
    for sd in SPREAD_GRID:
        ev = {"parity": {"margin": ratio, "alpha": ALPHA, "power": 0.8, "test": "equivalence"},
              "checks": [{"name": "parity:leg~base", "test": "paired", "sd": float(sd), "n_pairs": first,
                          "margin": ratio}]}
        sized = rounds.cap_for_power(ev, first, "pocock", floor=rounds.default_cap(first))
        out[float(sd)] = sized[0] if sized else rounds.default_cap(first)
    return out


def _design(first: int, cap: int) -> dict:
    from bakeoff_runtime.verdict import group_sequential as seq

    looks = seq.schedule(first, cap, first)
    levels = [seq.from_config({"looks": looks[:k], "max_seeds": cap, "spending": seq.POCOCK}, ALPHA)
              ["nominal_alpha"][-1] for k in range(1, len(looks) + 1)]
    return {"looks": looks, "levels": levels, "cap": cap}


def _sized(cond, reps: int, rng) -> Counter:
    """The loop with its cap from the first round's spread: each replicate's cap is the shipped cap at the
    grid SD just below its own (a smaller cap: the power figure errs low, never high)."""
    ratio, delta, first, table = cond
    d = rng.normal(delta, 1.0, (reps, 100))
    sds = d[:, :first].std(1, ddof=1)
    grid = np.array(sorted(table))
    below = grid[np.clip(np.searchsorted(grid, sds, side="right") - 1, 0, len(grid) - 1)]
    caps = np.array([table[float(g)] for g in below])
    out: Counter = Counter()
    for cap in np.unique(caps):
        rows = caps == cap
        state, used = sequential_vectorised(d[rows, :cap], _design(first, int(cap)), ratio)
        for k in ("pass", "fail", "inconclusive"):
            out[k] += int((state == k).sum())
        out["seeds"] += int(used.sum())
        out["cap_sum"] += int(cap) * int(rows.sum())
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=2000)
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--cap", type=int, default=60, help="the most stage-2 seeds a replicate runs")
    p.add_argument("--only", choices=("attempts", "until-decided"), help="run one of the two tables")
    args = p.parse_args()
    runner, table = Runner(args.seed, args.workers), Table()
    conds = [(r, d * r, args.cap) for r in (1.0, 3.0) for d in (1.0, 0.0)]
    first = 3
    table_1 = _cap_table(first, 1.0) if args.only != "attempts" else {}
    sized_conds = [(1.0, 0.0, first, table_1), (1.0, 1.0, first, table_1)]
    advised = naive = sized = []
    try:
        if args.only != "until-decided":
            advised = runner.run("attempts", _advised, conds, args.reps)
            naive = runner.run("naive", _naive, conds, args.reps)
        if args.only != "attempts":
            sized = runner.run("sized", _sized, sized_conds, 10 * args.reps)
    finally:
        runner.close()
    reps = args.reps
    if advised:
        _print_attempts(args, conds, advised, naive, table)
    if sized:
        _print_sized(first, sized_conds, sized, reps, table)
    print("all goals met" if table.ok else "goals missed: " + "; ".join(table.missed))
    return 0 if table.ok else 1


def _print_attempts(args, conds, advised, naive, table) -> None:
    reps = args.reps
    print(f"Attempts at one question as the tool advises (stage 1: {N1} seeds; stage 2: the recommended fresh seeds,")
    print(f"at most {args.cap}; a third try refused by the question record), alpha {ALPHA}, {reps} replicates a cell")
    table.header()
    for (ratio, delta, _), c, nv in zip(conds, advised, naive, strict=True):
        at = "d = margin" if delta else "d = 0 (identical legs)"
        went = c["stage2"]
        tail = (f"stage 2 in {went / reps:.0%}, mean {c['stage2_seeds'] / max(went, 1):.1f} seeds; third try refused "
                f"{c['third_refused']}, allowed {c['third_allowed']}")
        if delta:
            table.row(f"m/sigma {ratio:g}: P(pass | {at}), two-stage as advised", c["pass"] / reps, reps,
                      ("<=", ALPHA), tail)
            table.row(f"m/sigma {ratio:g}: P(fail | {at}), two-stage as advised", c["fail"] / reps, reps,
                      ("<=", ALPHA))
            table.row(f"m/sigma {ratio:g}: P(pass | {at}), naive: up to 3 decisions at full alpha", nv["pass"] / reps,
                      reps, note="the loop the issue measured")
        else:
            table.row(f"m/sigma {ratio:g}: P(fail | {at}), two-stage as advised", c["fail"] / reps, reps,
                      ("<=", ALPHA), tail)
            table.row(f"m/sigma {ratio:g}: P(pass | {at}), two-stage as advised (power)", c["pass"] / reps, reps)
            n_up = c["stage2_uncapped"]
            if n_up:
                table.row(f"m/sigma {ratio:g}: P(pass at stage 2 | {at}, its seeds as recommended)",
                          c["stage2_uncapped_pass"] / n_up, n_up, (">=", 0.8), f"{n_up} replicates reached it")
            table.row(f"m/sigma {ratio:g}: P(fail | {at}), naive: up to 3 decisions at full alpha", nv["fail"] / reps,
                      reps, note="the loop the issue measured")
    print()


def _print_sized(first, sized_conds, sized, reps, table) -> None:
    big = 10 * reps
    print(f"--until-decided at margin/sigma 1, first round {first} seeds, IF the cap were sized from the first "
          f"round's spread (rounds.cap_for_power), {big} replicates a cell. Not shipped: the loop keeps its cap and "
          "only advises this one for the next attempt, because of the first row:")
    table.header()
    for (_, delta, _, _), c in zip(sized_conds, sized, strict=True):
        tail = f"mean cap {c['cap_sum'] / big:.1f}, mean seeds spent {c['seeds'] / big:.1f}"
        if delta:
            table.row("cap sized from round 1: P(pass | d = margin)", c["pass"] / big, big,
                      note="vs alpha 0.05; " + tail)
        else:
            table.row("cap sized from round 1: P(pass | identical legs) (power)", c["pass"] / big, big, note=tail)
            table.row("cap sized from round 1: P(fail | identical legs)", c["fail"] / big, big)
    print()


if __name__ == "__main__":
    raise SystemExit(main())
