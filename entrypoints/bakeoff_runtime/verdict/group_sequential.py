"""The arithmetic of deciding parity in rounds of seeds (`bakeoff run --until-decided`).

Design: a group-sequential paired TOST read through *repeated confidence intervals*
(Jennison & Turnbull, 1989). At look k, with n_k seeds per leg planned of at most N,
the `1 - 2 alpha_k` interval of the per-seed differences is read against the margin
exactly as in a fixed design: pass when it lies inside, fail when it lies wholly
outside on one side, else add seeds. The nominal one-sided level alpha_k comes from
a Lan-DeMets alpha-spending function on the information fraction t_k = n_k / N:

* `obrien_fleming`: f(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt t) (spends little early);
* `pocock`:         f(t) = alpha ln(1 + (e - 1) t) (spends more early).

(gsDesign's sfLDOF / sfLDPocock define the same two functions.) Each one-sided bound
of the interval sequence then misses the true difference with probability <= alpha over
all looks together, so P(pass) <= alpha when the true difference is at or beyond the
margin, and P(fail) <= alpha when it is within, whatever look the procedure stops at.

The paired t's variance is estimated, so the boundaries are t critical values computed
look by look from the past looks only: the first look's is the exact t quantile at the
alpha spent by its information fraction; each later look's is the value that makes the
chance of having crossed by it (at the earlier looks' fixed values) equal the alpha spent
by then, from fixed-seed draws of the pivotal t sequence (deterministic: a function of
the design so far). So a look's level never depends on looks not yet taken, and the
rounds grow by a fixed schedule, not by the data. (`boundaries` keeps the known-variance
z boundaries, by recursive integration of the score process, Armitage, McPherson & Rowe
1969.) `benchmarks/verdict_oc.py` checks the error rates through this loop.

The doomed-leg rule (`doomed`) is here too: it looks at the validation curves of jobs
still running. numpy/scipy only: this runs in the Evaluate step's container.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from scipy import special as _sp

from bakeoff_runtime.verdict.parity_tests import test_of

OBRIEN_FLEMING, POCOCK = "obrien_fleming", "pocock"
SPENDING = (OBRIEN_FLEMING, POCOCK)
DESIGN = "group-sequential paired TOST (repeated confidence intervals, Lan-DeMets alpha spending)"
DESIGN_SCHEMA = "bakeoff.sequential/1"


def spent(t: float, alpha: float, spending: str = POCOCK) -> float:
    """Alpha spent (one-sided) by information fraction t in [0, 1]."""
    t = min(max(float(t), 0.0), 1.0)
    if t == 0:
        return 0.0
    if spending == OBRIEN_FLEMING:
        return float(2 - 2 * _sp.ndtr(_sp.ndtri(1 - alpha / 2) / math.sqrt(t)))
    if spending == POCOCK:
        return float(alpha * math.log(1 + (math.e - 1) * t))
    raise ValueError(f"unknown spending function {spending!r} ({', '.join(SPENDING)})")


def _phi(x):
    return np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def _trapezoid(h: float, n: int) -> np.ndarray:
    w = np.full(n, h)
    w[0] = w[-1] = h / 2
    return w


@lru_cache(maxsize=256)
def _boundaries(fractions: tuple[float, ...], alpha: float, spending: str) -> tuple[float, ...]:
    # Only a group-sequential design gets here; scipy.optimize costs every other evaluation 0.2 s to import.
    from scipy import optimize as _opt

    t = np.asarray(fractions, float)
    cum = np.array([spent(x, alpha, spending) for x in t])
    inc = np.diff(np.concatenate([[0.0], cum]))
    out: list[float] = []
    # S_k = Z_k sqrt(t_k) has independent N(0, t_k - t_{k-1}) increments under the null.
    steps = np.diff(np.concatenate([[0.0], t]))
    h = float(min(np.sqrt(steps[steps > 0]).min(), 1.0)) / 40
    grid = weights = dens = np.zeros(0)
    for k, (tk, ik) in enumerate(zip(t, inc, strict=True)):
        if k == 0:
            z = float(_sp.ndtri(1 - ik)) if ik > 0 else math.inf
            b = z * math.sqrt(tk)
            lo = -9 * math.sqrt(tk)
            hi = min(b, 9 * math.sqrt(tk))
            n = max(2, int(math.ceil((hi - lo) / h)) + 1)
            grid = np.linspace(lo, hi, n)
            weights = _trapezoid(grid[1] - grid[0], n)
            dens = _phi(grid / math.sqrt(tk)) / math.sqrt(tk)
            out.append(z)
            continue
        sd = math.sqrt(tk - t[k - 1])
        mass = weights * dens

        def crossing(bound, mass=mass, sd=sd, grid=grid):
            return float(np.sum(mass * _sp.ndtr(-(bound - grid) / sd)))

        if ik <= 0 or sd == 0:
            b = math.inf
        else:
            top = grid[-1] + 12 * sd
            if crossing(top) >= ik:
                b = top
            else:
                b = _opt.brentq(lambda x, ik=ik: crossing(x) - ik, grid[0] - 12 * sd, top, xtol=1e-10)
        out.append(b / math.sqrt(tk))
        lo = -9 * math.sqrt(tk)
        hi = min(b, 9 * math.sqrt(tk))
        n = max(2, int(math.ceil((hi - lo) / h)) + 1)
        new = np.linspace(lo, hi, n)
        kern = _phi((new[:, None] - grid[None, :]) / sd) / sd
        dens = kern @ mass
        grid, weights = new, _trapezoid(new[1] - new[0], n)
    return tuple(out)


def boundaries(fractions: Sequence[float], alpha: float, spending: str = POCOCK) -> list[float]:
    """One-sided critical values z_k (known variance) at increasing information fractions."""
    fr = tuple(float(x) for x in fractions)
    if not fr or any(b <= a for a, b in zip(fr, fr[1:], strict=False)) or fr[0] <= 0 or fr[-1] > 1 + 1e-12:
        raise ValueError(f"information fractions must increase within (0, 1]; got {list(fr)}")
    return list(_boundaries(fr, float(alpha), spending))


CALIBRATION_REPS = 200_000
CALIBRATION_SEED = 20261203


def _pivotal_t(looks: tuple[int, ...]) -> np.ndarray:
    """Draws of the paired t statistic at each look under the null (looks x CALIBRATION_REPS).

    The t sequence is pivotal: its law depends on neither the true difference nor the spread,
    only on the look sizes. Each look's draws come from the generator in look order, so the
    draws of the first k looks are the same whatever looks follow (a look's level never
    depends on the future)."""
    rng = np.random.default_rng(CALIBRATION_SEED)
    sizes = np.diff(np.concatenate([[0], looks])).astype(int)
    total = np.zeros(CALIBRATION_REPS)
    ss = np.zeros(CALIBRATION_REPS)
    out = []
    n = 0
    for s in sizes:
        # a batch of s fresh standard normal differences: its mean and within-batch sum of squares
        batch_mean = rng.standard_normal(CALIBRATION_REPS) / math.sqrt(s)
        within = rng.chisquare(s - 1, CALIBRATION_REPS) if s > 1 else np.zeros(CALIBRATION_REPS)
        if n:
            grand_before = total / n
            ss = ss + within + (n * s / (n + s)) * (batch_mean - grand_before) ** 2
        else:
            ss = within
        total = total + s * batch_mean
        n += s
        out.append((total / n) / np.sqrt(ss / (n - 1) / n))
    return np.stack(out)


@lru_cache(maxsize=256)
def _critical(looks: tuple[int, ...], max_seeds: int, alpha: float, spending: str) -> tuple[float, ...]:
    """Each look's critical t, computed look by look from the past looks alone: the value that
    makes the probability of crossing at this look or an earlier one (at the earlier looks'
    own, already fixed, critical values) equal the alpha spent by this look's information
    fraction. The first look's is the exact t quantile."""
    t_stats = _pivotal_t(looks)
    crossed = np.zeros(CALIBRATION_REPS, dtype=bool)
    out: list[float] = []
    for k, n in enumerate(looks):
        target = spent(n / max_seeds, alpha, spending)
        if k == 0:
            c = float(_sp.stdtrit(n - 1, 1 - target)) if target > 0 else math.inf
        else:
            need = int(round((target - crossed.mean()) * CALIBRATION_REPS))
            rest = np.sort(t_stats[k][~crossed])
            c = float(rest[-need]) if 0 < need <= rest.size else math.inf
        out.append(c)
        crossed |= t_stats[k] > c
    return tuple(out)


def nominal_levels(looks: Sequence[int], max_seeds: int, alpha: float, spending: str = POCOCK) -> list[float]:
    """The one-sided level each look's interval is read at, looks in seeds per leg: the t tail
    beyond the look's critical value (see `_critical`). Look k's level depends on looks 1..k
    only, so adding a look never changes what an earlier look decided at."""
    looks = tuple(int(n) for n in looks)
    if any(n > max_seeds for n in looks) or any(n < 2 for n in looks):
        raise ValueError(f"looks {list(looks)} must lie between 2 seeds and the cap of {max_seeds}")
    if any(b <= a for a, b in zip(looks, looks[1:], strict=False)):
        raise ValueError(f"looks {list(looks)} must increase")
    crit = _critical(looks, max_seeds, float(alpha), spending)
    return [float(_sp.stdtr(n - 1, -c)) if math.isfinite(c) else 0.0 for c, n in zip(crit, looks, strict=True)]


def boundaries_z(looks: Sequence[int], max_seeds: int, alpha: float, spending: str = POCOCK) -> list[float]:
    """The known-variance boundaries the spending function gives (for comparison and tests)."""
    return boundaries([n / max_seeds for n in looks], alpha, spending)


def critical_t(nominal: float, n_pairs: int) -> float:
    """The interval's half-width multiplier: the t quantile at the look's nominal level."""
    return float(_sp.stdtrit(n_pairs - 1, 1 - nominal))


def design_record(looks: Sequence[int], max_seeds: int, alpha: float, spending: str = POCOCK) -> dict:
    """What evaluation.json states about the design at its latest look."""
    levels = nominal_levels(looks, max_seeds, alpha, spending)
    fractions = [n / max_seeds for n in looks]
    return {"schema": DESIGN_SCHEMA, "design": DESIGN, "spending": spending, "alpha": alpha,
            "boundaries": "t critical values look by look from past looks only (exact t at the first look, "
                          f"then {CALIBRATION_REPS} fixed-seed draws of the pivotal t sequence)",
            "max_seeds": max_seeds, "looks": list(looks), "look": len(looks),
            "final": looks[-1] >= max_seeds,
            "information_fractions": fractions,
            "alpha_spent": [spent(t, alpha, spending) for t in fractions],
            "nominal_alpha": levels,
            "ci_level": 1 - 2 * levels[-1]}


FUTILITY_SD_QUANTILE = 0.1


def futile(diff, sd, n: int, max_seeds: int, final_level: float, margin: float, test: str = "equivalence",
           direction: str = "minimize"):
    """Whether the comparison looks undecidable even at the cap: the interval the cap would give,
    centred on today's mean difference, would still straddle the margin even at an optimistic
    spread (the 10th percentile of what the true SD could be, given today's on n - 1 df).
    Stopping on it only turns would-be decisions into `inconclusive`, so it can lower the
    pass and fail error rates, never raise them; what it costs in power is in the benchmark.
    Works elementwise on arrays."""
    diff, sd = np.asarray(diff, float), np.asarray(sd, float)
    worse = diff if direction == "minimize" else -diff
    optimistic = math.sqrt(float(_sp.chdtri(n - 1, 1 - FUTILITY_SD_QUANTILE)) / (n - 1))
    half = critical_t(final_level, max_seeds) * sd * optimistic / math.sqrt(max_seeds)
    gap = test_of(test).futility_gap(worse)
    return (gap - half < margin) & (gap + half > margin)


def simulate(first: int, max_seeds: int, sigma: float, margin: float, delta: float, alpha: float, *,
             spending: str = POCOCK, increment: int | None = None, reps: int = 4000, seed: int = 0,
             test: str = "equivalence", futility: bool = False) -> dict:
    """Monte Carlo of the rounds on per-seed differences ~ N(delta, sigma^2): P(pass), P(fail),
    P(inconclusive) and the mean seeds per leg spent. Rounds add `increment` seeds (default:
    the first round's size) until the cap; the evaluation's decision rule at each look, and
    with `futility` the early stop of `futile` from the second look on."""
    rng = np.random.default_rng(seed)
    looks = schedule(first, max_seeds, increment)
    levels = nominal_levels(looks, max_seeds, alpha, spending)
    d = rng.normal(delta, sigma, (reps, max_seeds))
    state = np.full(reps, "", dtype=object)
    used = np.full(reps, looks[-1])
    for n, a in zip(looks, levels, strict=True):
        live = state == ""
        x = d[live, :n]
        mean, se = x.mean(1), x.std(1, ddof=1) / math.sqrt(n)
        half = critical_t(a, n) * se
        lo, hi = mean - half, mean + half
        passed, failed = test_of(test).decide(lo, hi, margin)  # the differences are worse-positive here
        idx = np.flatnonzero(live)
        state[idx[passed]] = "pass"
        state[idx[failed & ~passed]] = "fail"
        used[idx[passed | failed]] = n
        if futility and n != looks[0] and n < looks[-1]:
            give_up = ~passed & ~failed & futile(mean, x.std(1, ddof=1), n, max_seeds, levels[-1], margin, test)
            state[idx[give_up]] = "inconclusive"
            used[idx[give_up]] = n
    state[state == ""] = "inconclusive"
    return {"pass": float((state == "pass").mean()), "fail": float((state == "fail").mean()),
            "inconclusive": float((state == "inconclusive").mean()), "mean_seeds": float(used.mean()),
            "looks": looks}


def schedule(first: int, max_seeds: int, increment: int | None = None) -> list[int]:
    """The looks, in seeds per leg: the first round, then `increment` more each round, the cap last."""
    if first < 2 or max_seeds < first:
        raise ValueError(f"need 2 <= first round ({first}) <= cap ({max_seeds})")
    step = max(1, increment or first)
    looks = list(range(first, max_seeds, step)) + [max_seeds]
    return sorted(set(looks))


# --- the doomed-leg rule -------------------------------------------------------------------
def doomed(leg_curve: Sequence[float], base_curve: Sequence[float], margin: float, *,
           divergence_factor: float = 10.0, direction: str = "minimize", noise_sd: float | None = None,
           z: float = 3.0) -> str | None:
    """Why a leg still training should be stopped, from its validation curve and the baseline's
    (same seed, same eval steps), or None. Two rules, either suffices:

    * diverged: a non-finite value, or a value `divergence_factor` times the baseline's;
    * beyond the margin: at each of the last two evals the leg is worse than the baseline by
      more than margin + z * noise_sd (noise_sd: the SD of a single eval's paired difference,
      e.g. from earlier seeds; without it this rule is off).

    A leg stopped by it is `inconclusive` (its seeds not run are no evidence), so a false stop
    costs a decision, not a false `fail`; still, it must almost never stop a leg that would pass:
    `benchmarks/cost_of_verdict.py` measures how often it does."""
    n = min(len(leg_curve), len(base_curve))
    if n == 0:
        return None
    sign = 1.0 if direction == "minimize" else -1.0
    last, base = float(leg_curve[n - 1]), float(base_curve[n - 1])
    if not math.isfinite(last):
        return f"the validation metric is {last} at eval {n}"
    if direction == "minimize" and base > 0 and last > divergence_factor * base:
        return f"the validation metric {last:.4g} is over {divergence_factor:g}x the baseline's {base:.4g}"
    if noise_sd is None or n < 2:
        return None
    gap = [sign * (float(leg_curve[i]) - float(base_curve[i])) for i in (n - 2, n - 1)]
    bar = margin + z * noise_sd
    if all(g > bar for g in gap):
        return (f"worse than the baseline by {gap[-1]:.4g} at each of the last two evals, beyond the margin "
                f"{margin:.4g} plus {z:g} SD of eval noise ({noise_sd:.3g})")
    return None


def from_config(seq: dict | None, alpha: float) -> dict | None:
    """The design record of the evaluation config's `sequential` block (None: a fixed design).
    The block: {"looks": [seeds per leg at each round so far], "max_seeds": N, "spending": ...}."""
    if not seq:
        return None
    looks = [int(n) for n in seq["looks"]]
    return design_record(looks, int(seq["max_seeds"]), alpha, str(seq.get("spending") or POCOCK))
