"""The statistics behind a parity verdict.

Equivalence is tested, never assumed. Each leg is compared with the baseline on the
difference `leg - baseline` of the parity metric:

* paired by seed when a seed completed on both legs (every seed starts from the same
  weights and sees the same batches on every leg, so the per-seed differences carry
  far less noise than the legs do), else Welch's unequal-variance t for what cannot
  be paired;
* the decision reads the `1 - 2 alpha` confidence interval of the difference against
  the margin fixed before the runs, which is the two one-sided tests (TOST) procedure;
* three outcomes: `pass` (equivalence shown), `fail` (a difference beyond the margin
  shown) and `inconclusive` (neither), so that too few seeds never reads as a
  broken port.

The power functions answer "how many seeds would decide it": exact for the paired
t (the CI half-width depends on the sample SD, whose chi distribution is integrated
over a quantile grid), and the pooled-t approximation for unpaired legs.

Everything works on numpy arrays, so `benchmarks/verdict_oc.py` runs the very
decision rule shipped here over thousands of simulated bake-offs.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from statistics import fmean, stdev

import numpy as np
from scipy import special as _sp  # the distribution functions, without scipy.stats' 0.6 s import

from bakeoff_runtime.verdict import skew
from bakeoff_runtime.verdict.parity_tests import EQUIVALENCE, NON_INFERIORITY, test_of  # noqa: F401  (the names, re-exported)


def _t_ppf(q, df):
    return _sp.stdtrit(df, q)


def t_cdf(x, df):
    """Student's t distribution function (scipy.special.stdtr), for tests built on this module's intervals."""
    return _sp.stdtr(df, x)


def _chi2_ppf(q, df):
    return _sp.chdtri(df, 1 - np.asarray(q))

PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"
MAX_RECOMMENDED_SEEDS = 100


def describe(values: Sequence[float]) -> dict:
    """Mean, spread and a 95% t interval of one leg's values across seeds."""
    vals = [float(v) for v in values]
    n = len(vals)
    if n == 0:
        return {"n": 0, "mean": None, "std": None, "min": None, "max": None, "cv": None, "ci95": None,
                "values": []}
    mean = fmean(vals)
    sd = stdev(vals) if n > 1 else None
    ci = None
    if n > 1:
        half = _t_ppf(0.975, n - 1) * sd / math.sqrt(n)
        ci = [mean - half, mean + half]
    cv = (sd / abs(mean)) if sd is not None and mean != 0 else None
    return {"n": n, "mean": mean, "std": sd, "min": min(vals), "max": max(vals), "cv": cv, "ci95": ci,
            "values": vals}


@lru_cache(maxsize=4096)
def t_quantile(q: float, df: float) -> float:
    return float(_t_ppf(q, df))


# --- the spread floor -------------------------------------------------------------------
# A metric that moves in steps (accuracy on N examples moves in 1/N) rounds each run's true
# value: the rounding error is about uniform on one step, variance q^2/12, so a difference of
# two rounded values carries at least q^2/6 and one leg's values q^2/12. Two seeds whose
# differences came out equal have a sample SD of 0, and an interval built on it is a point that
# decides on luck; flooring the SD at the rounding alone keeps the interval honest.
FLOAT_EQUAL = 1e-9       # relative to the values: differences this close on every seed are one number
LATTICE_MAX = 10**6      # the finest lattice 1/N looked for: accuracy on up to a million examples
LATTICE_TOL = 1e-14      # relative: k/N written as a float is within an ulp or two (2.2e-16) of it
STEP_RESOLUTION, STEP_LATTICE, STEP_DECIMALS, STEP_FLOAT = (
    "parity.resolution", "the lattice the values sit on", "the finest decimal the values carry", "float precision")


def _lattice(vals: Sequence[float]) -> float | None:
    """1/N for the smallest N <= LATTICE_MAX such that every value is a multiple of 1/N to float precision
    (accuracy on 300 examples: 1/300, however many decimals 0.91333... prints), or None. Each value's best
    rational approximation with a denominator up to LATTICE_MAX (continued fractions); N is their least
    common multiple. A float loss sits on no such lattice: a value is approximated that closely by chance
    about 1% of the time, and every value of a run with one denominator almost never."""
    from fractions import Fraction

    n = 1
    for v in vals:
        f = Fraction(v).limit_denominator(LATTICE_MAX)
        if abs(float(f) - v) > LATTICE_TOL * max(1.0, abs(v)) or (f == 0 and v != 0):
            return None
        n = n * f.denominator // math.gcd(n, f.denominator)
        if n > LATTICE_MAX:
            return None
    return 1.0 / n


def metric_step_of(values: Sequence[float], resolution: float | None = None) -> tuple[float | None, str | None]:
    """The metric's step and what it was read from: `resolution` when given; else the lattice the values
    sit on (1/N, N <= 10^6: accuracy on N examples, or a metric written with up to 6 decimals), whatever
    decimals they print; else the finest decimal they carry (7-12 decimals); else float precision, where
    the floor never binds. (None, None) when every value is 0."""
    if resolution:
        return float(resolution), STEP_RESOLUTION
    vals = [abs(float(v)) for v in values if math.isfinite(v)]
    if not any(vals):
        return None, None
    lattice = _lattice(vals)
    if lattice is not None:
        return lattice, STEP_LATTICE
    for k in range(7, 13):
        scale = 10.0 ** k
        # A value that rounds to 0 at k decimals is not written at k decimals, however small the
        # remainder: 3e-11 is not "0 at 0 decimals" (read so, a metric near 1e-11 had a step of 1,
        # an SD floor of 0.41 and an interval of +-0.7 that nothing could decide).
        if all(v == 0 or (round(v * scale) != 0 and abs(v * scale - round(v * scale)) <= 1e-9 * max(1.0, v * scale))
               for v in vals):
            return 10.0 ** -k, STEP_DECIMALS
    return max(vals) * 1e-12, STEP_FLOAT  # numerical noise: the floor never binds


def metric_step(values: Sequence[float], resolution: float | None = None) -> float | None:
    """The metric's step (metric_step_of without what it was read from)."""
    return metric_step_of(values, resolution)[0]


def floored_sd(sd: float, step: float | None, paired: bool) -> float:
    """`sd` floored at the SD the rounding to `step` alone gives (a difference, or one leg's values)."""
    if not step:
        return sd
    return max(sd, step / math.sqrt(6 if paired else 12))


# --- the interval -----------------------------------------------------------------------
def paired_interval(diffs: Sequence[float], alpha: float, step: float | None = None,
                    lattice: float | None = None) -> dict:
    """Mean per-seed difference, its standard error and the `1 - 2 alpha` t interval; the SD of
    the differences is floored at what rounding to the metric's `step` gives. `lattice`: the
    metric's declared step (parity.resolution), for the continuity correction."""
    d = [float(x) for x in diffs]
    n = len(d)
    if n < 2:
        raise ValueError("a paired test needs at least 2 pairs")
    mean = fmean(d)
    raw_sd = stdev(d)
    sd = floored_sd(raw_sd, step, paired=True)
    se = sd / math.sqrt(n)
    # Differences that move in declared steps put their mean on a lattice of spacing step / n, and
    # the t interval then passes a difference at the margin more often than alpha (0.061 at 5 seeds
    # of accuracy on 200 examples: benchmarks/verdict_oc.py, cell d). Half the lattice spacing on
    # each bound, the usual continuity correction, restores it. Only for a declared step: values
    # that merely carry few decimals (a loss logged rounded) are not known to move in steps.
    correction = lattice / (2 * n) if lattice else 0.0
    t_crit = t_quantile(1 - alpha, n - 1)
    half = t_crit * se + correction
    lo, hi = mean - half, mean + half
    # Visibly skewed differences: on each side the wider of the t bound and Hall's skewness-corrected one
    # (verdict/skew.py), so pass and fail each need both tests; the plain t interval is kept beside it.
    g = skew.skewness(d) if raw_sd > 0 else 0.0
    out = {"test": "paired", "diff": mean, "sd": sd, "sd_observed": raw_sd, "sd_floored": sd > raw_sd,
           "se": se, "df": float(n - 1), "n_pairs": n, "ci": [lo, hi], "ci_level": 1 - 2 * alpha,
           "continuity_correction": correction, "skewness": g, "ci_t": [lo, hi]}
    out["skew_visible"] = skew.visible(g, n)
    if out["skew_visible"]:
        h_lo, h_hi = skew.hall_bounds(mean, sd, n, g, t_crit)
        out["ci_skew_corrected"] = [h_lo - correction, h_hi + correction]
        out["ci"] = [min(lo, h_lo - correction), max(hi, h_hi + correction)]
        out["skew_widened"] = out["ci"] != [lo, hi]
    return out


OUTLIER_MIN_PAIRS = 4  # leave one out and 3 remain: a spread on 2 degrees of freedom
# The check's own level, not the verdict's alpha: at 0.05 it flagged about 4% of normal legs,
# which cost identical legs that much power (three legs together: 0.68 -> 0.59) for next to no
# protection against skew (benchmarks/verdict_oc.py, cells c and e); at 0.01 it costs about 1%.
OUTLIER_ALPHA = 0.01


def _sd(values: Sequence[float]) -> float:
    """The sample SD in floats, within an ulp or so of statistics.stdev (whose exact fractions cost ~100x
    as much): the outlier check takes n of them per comparison, and the planning and the benchmarks call
    it thousands of times. Two passes with math.fsum, and the mean's rounding error taken back out."""
    n = len(values)
    m = math.fsum(values) / n
    dev = [v - m for v in values]
    ss = math.fsum(e * e for e in dev) - math.fsum(dev) ** 2 / n
    return math.sqrt(max(ss, 0.0) / (n - 1))


def outlier(diffs: Sequence[float], alpha: float = OUTLIER_ALPHA, step: float | None = None) -> dict | None:
    """The per-seed difference that lies too far from the others for near-normal differences, or None.

    The t interval's error rates hold for differences that are close to normal. A leg that is now
    and then much worse (or better) than the baseline breaks that, and the interval then looks
    surer than it is. Each difference is compared with the other seeds' by its externally
    studentized deviation, (d_i - mean of the others) / (their SD * sqrt(1 + 1/(n-1))), which is t
    on n - 2 degrees of freedom for normal differences; the largest, Bonferroni-corrected over the
    n seeds, is called an outlier at `alpha` (OUTLIER_ALPHA). From OUTLIER_MIN_PAIRS pairs on.
    What no check of the seeds run can see is a rare regression that struck none of them (see
    `unseen_rate`)."""
    d = [float(x) for x in diffs]
    n = len(d)
    if n < OUTLIER_MIN_PAIRS:
        return None
    worst = None
    for i, x in enumerate(d):
        others = d[:i] + d[i + 1:]
        sd = floored_sd(_sd(others), step, paired=True)
        gap = x - fmean(others)
        t = math.inf if sd == 0 and gap else (0.0 if sd == 0 else gap / (sd * math.sqrt(1 + 1 / (n - 1))))
        p = min(1.0, n * 2 * float(1 - t_cdf(abs(t), n - 2))) if math.isfinite(t) else 0.0
        if worst is None or p < worst["p_value"]:
            worst = {"index": i, "difference": x, "t": t, "p_value": p, "pairs": n}
    return worst if worst is not None and worst["p_value"] <= alpha else None


def unseen_rate(n: int, alpha: float) -> float:
    """The per-seed rate a rare event could have and still strike none of `n` independent seeds
    with probability alpha: 1 - alpha^(1/n) (3/n for small alpha, the rule of three at 0.05)."""
    return 1.0 - alpha ** (1.0 / n) if n else 1.0


def welch(a: Sequence[float], b: Sequence[float], step: float | None = None) -> tuple[float, float, float]:
    """Difference of means (b - a), its standard error and Welch-Satterthwaite df (each leg's
    variance floored at what rounding to the metric's `step` gives)."""
    na, nb = len(a), len(b)
    floor = (step * step / 12) if step else 0.0
    va, vb = max(float(np.var(a, ddof=1)), floor), max(float(np.var(b, ddof=1)), floor)
    diff = fmean(b) - fmean(a)
    sa, sb = va / na, vb / nb
    se = math.sqrt(sa + sb)
    if se == 0:
        return diff, 0.0, float(na + nb - 2)
    df = (sa + sb) ** 2 / (sa ** 2 / (na - 1) + sb ** 2 / (nb - 1))
    return diff, se, df


def welch_interval(a: Sequence[float], b: Sequence[float], alpha: float, step: float | None = None) -> dict:
    """mean(b) - mean(a) with Welch's t interval at `1 - 2 alpha` (a: baseline, b: leg)."""
    if len(a) < 2 or len(b) < 2:
        raise ValueError("an unpaired test needs at least 2 replicates per leg")
    diff, se, df = welch(a, b, step)
    half = t_quantile(1 - alpha, df) * se
    return {"test": "welch", "diff": diff, "sd": None, "se": se, "df": df, "n_pairs": 0,
            "n_leg": len(b), "n_baseline": len(a), "ci": [diff - half, diff + half], "ci_level": 1 - 2 * alpha}


def tost_p_values(diff: float, se: float, df: float, low: float, high: float) -> tuple[float | None, float | None]:
    """p of H0: diff <= low and of H0: diff >= high; None when there is no spread to test with."""
    if se == 0:
        return None, None
    p_low = float(t_cdf(-(diff - low) / se, df))
    p_high = float(t_cdf((diff - high) / se, df))
    return p_low, p_high


# --- the decision -----------------------------------------------------------------------
def decide(lo, hi, margin, test: str = EQUIVALENCE, direction: str = "minimize"):
    """pass / fail / inconclusive from the interval [lo, hi] of `leg - baseline`.

    Works elementwise on arrays. Equivalence: pass when the interval lies inside
    (-margin, +margin), fail when it lies wholly outside on one side. Non-inferiority:
    the same on the worse side only (a leg better than the baseline is never a failure).
    """
    lo, hi, margin = np.asarray(lo, float), np.asarray(hi, float), np.asarray(margin, float)
    if direction == "maximize":  # worse = lower: flip so that positive is worse
        lo, hi = -hi, -lo
    passed, failed = test_of(test).decide(lo, hi, margin)
    out = np.where(passed, PASS, np.where(failed, FAIL, INCONCLUSIVE))
    return str(out) if out.ndim == 0 else out


def compare(baseline: dict[int, float], leg: dict[int, float], *, margin: float, alpha: float,
            test: str = EQUIVALENCE, direction: str = "minimize", resolution: float | None = None) -> dict:
    """Compare a leg with the baseline from their completed seeds (seed -> metric value).

    Pairs the seeds both legs completed; with fewer than 2 pairs falls back to Welch on
    all values; with fewer than 2 values on a leg there is nothing to test. The spread is
    floored at the metric's step (`resolution`, else the finest decimal the values carry), so
    that equal differences never decide on a point interval; when every value is 0 and no
    resolution is given there is no step to floor at, and nothing is decided.
    """
    common = sorted(set(baseline) & set(leg))
    diffs = [leg[s] - baseline[s] for s in common]
    out: dict = {"seeds_paired": common,
                 "seeds_unpaired": {"leg": sorted(set(leg) - set(common)),
                                    "baseline": sorted(set(baseline) - set(common))},
                 "per_seed_diffs": [[s, d] for s, d in zip(common, diffs, strict=False)],
                 "margin": margin, "alpha": alpha, "test_kind": test, "direction": direction}
    step, basis = metric_step_of([*baseline.values(), *leg.values()], resolution)
    out["step"], out["step_basis"] = step, basis
    enough = len(common) >= 2 or (len(baseline) >= 2 and len(leg) >= 2)
    if enough and step is None:
        out.update({"test": None, "outcome": INCONCLUSIVE, "identical": False, "no_step": True,
                    "why_short": "every run on both legs gave exactly 0: with no "
                                 "spread and no known step of the metric the interval would be a point; set "
                                 "parity.resolution to the metric's step (e.g. 1/N for accuracy on N examples)"})
        return out
    scale = max([abs(v) for v in (*baseline.values(), *leg.values()) if math.isfinite(v)] or [0.0])
    if (len(common) >= 2 and basis in (STEP_FLOAT, STEP_DECIMALS) and any(d != 0 for d in diffs)
            and _sd(diffs) <= FLOAT_EQUAL * scale):
        # Differences equal on every seed to float precision, on a metric with no known step: the floor at
        # float precision would leave a point interval that decides on luck (a constant offset is not
        # certainty about the next seed), whatever decimals the values print.
        out.update({"test": None, "outcome": INCONCLUSIVE, "identical": False, "no_step": True,
                    "why_short": f"the per-seed differences are equal on all {len(common)} seeds to float precision "
                                 f"({diffs[0]:.6g}), so the interval would be a point; set parity.resolution to the "
                                 "metric's step"})
        return out
    if len(common) >= 2:
        out.update(paired_interval(diffs, alpha, step, lattice=resolution))
    elif enough:
        out.update(welch_interval(list(baseline.values()), list(leg.values()), alpha, step))
    else:
        out.update({"test": None, "outcome": INCONCLUSIVE, "identical": False,
                    "why_short": f"needs at least 2 seeds completed on both legs; have {len(leg)} on the leg "
                                 f"and {len(baseline)} on the baseline"})
        return out
    lo, hi = out["ci"]
    out["outcome"] = decide(lo, hi, margin, test, direction)
    out["identical"] = bool(out["test"] == "paired" and all(d == 0 for d in diffs))
    if out["se"] > 0 and out.get("skew_visible"):
        # The p of each side as the interval reads it: the larger of the t and Hall p (skew.p_side).
        p_low, p_high = skew.p_side(out, -margin, "low", t_cdf), skew.p_side(out, margin, "high", t_cdf)
        out.update({"p_lower": p_low, "p_upper": p_high, "p_value": max(p_low, p_high)} if test == EQUIVALENCE else
                   {"p_value": p_high if direction == "minimize" else p_low})
    elif out["se"] > 0:
        out.update(test_of(test).p_values(out["diff"], out["se"], out["df"], margin, direction, t_cdf))
    else:
        # No spread at all: the interval is a point and a p-value would be a pretence.
        out["p_value"] = None
    h_lo, h_hi = (lo, hi) if direction == "minimize" else (-hi, -lo)
    out["better"] = bool(h_hi < 0)        # shown better than the baseline
    out["worse"] = bool(h_lo > 0)         # shown worse (maybe still within the margin)
    return out


# --- power and the seeds that would decide it ------------------------------------------
_GRID = 256


@lru_cache(maxsize=512)
def _sd_factors(df: int) -> np.ndarray:
    """Quantiles of s/sigma for a sample SD with `df` degrees of freedom (equal-probability grid)."""
    q = (np.arange(_GRID) + 0.5) / _GRID
    return np.sqrt(_chi2_ppf(q, df) / df)


_WELCH_GRID = 48


@lru_cache(maxsize=512)
def _welch_half_widths(n: int, alpha: float) -> np.ndarray:
    """CI half-width / sigma of Welch's interval with n seeds per leg of equal spread, on a grid
    of both legs' sample variances (equal-probability chi-square quantiles): Welch's df
    varies with them, and at 2-4 seeds it is far below the pooled 2n-2."""
    q = (np.arange(_WELCH_GRID) + 0.5) / _WELCH_GRID
    v = _chi2_ppf(q, n - 1) / (n - 1)  # sample variance / sigma^2
    va, vb = np.meshgrid(v, v)
    se = np.sqrt((va + vb) / n)
    df = (va + vb) ** 2 * (n - 1) / (va ** 2 + vb ** 2)
    return (_t_ppf(1 - alpha, df) * se).ravel()


def outcome_probabilities(n: int, sigma: float, margin: float, delta: float, alpha: float,
                          paired: bool = True, test: str = EQUIVALENCE) -> dict[str, float]:
    """P(pass), P(fail), P(inconclusive) of the shipped rule with `n` seeds per leg when the true
    difference is `delta` (positive = worse) and `sigma` is the SD of a per-seed difference
    (paired) or of one leg's values (unpaired, both legs equally spread; Welch's interval).
    Exact up to the quadrature over the sample SDs (checked against a simulation in the tests)."""
    if n < 2:
        return {PASS: 0.0, FAIL: 0.0, INCONCLUSIVE: 1.0}
    if sigma <= 0:
        out = decide(delta, delta, margin, test)
        return {k: float(out == k) for k in (PASS, FAIL, INCONCLUSIVE)}
    if paired:
        se = sigma / math.sqrt(n)
        half = t_quantile(1 - alpha, n - 1) * se * _sd_factors(n - 1)   # CI half-width per SD quantile
    else:
        se = sigma * math.sqrt(2.0 / n)  # the SD of the difference of means
        half = sigma * _welch_half_widths(n, alpha)
    p_pass, p_fail = test_of(test).outcome_probabilities(_sp.ndtr, margin, half, delta, se)
    p_pass, p_fail = float(np.mean(p_pass)), float(np.mean(p_fail))
    return {PASS: p_pass, FAIL: p_fail, INCONCLUSIVE: max(0.0, 1 - p_pass - p_fail)}


PLANNING_CONFIDENCE = 0.8  # the spread a study is sized on: its 80% upper confidence limit


def spread_upper_limit(sigma: float, df: int, confidence: float = PLANNING_CONFIDENCE) -> float:
    """The one-sided upper confidence limit of a standard deviation estimated on `df` degrees of
    freedom: sigma_hat * sqrt(df / chi2_{1-confidence}(df)).

    Sizing a study on a pilot's SD as if it were exact under-delivers its power about half the
    time; averaging the power over what the SD could be is dominated, at 1-2 degrees of freedom,
    by spreads many times the estimate, so the seeds it asks for swing by an order of magnitude
    from one pilot to the next. Planning on an upper confidence limit (Browne, Statistics in
    Medicine 14:1933-1940, 1995, recommends 80%) delivers at least the planned power with 80%
    confidence and is a single monotone function of the estimate."""
    return float(sigma * math.sqrt(df / _chi2_ppf(1.0 - confidence, df)))


def seeds_for_power(sigma: float, margin: float, alpha: float, power: float = 0.8, paired: bool = True,
                    test: str = EQUIVALENCE, limit: int = MAX_RECOMMENDED_SEEDS, sigma_df: int | None = None,
                    start: int = 2, fail_alpha: float | None = None) -> int | None:
    """Fewest seeds per leg with which legs that truly agree pass, and a leg worse by twice
    the margin fails, each with probability >= `power`. None when `limit` seeds do not.

    `sigma_df`: sigma is an estimate on that many degrees of freedom (a pilot's spread); the
    seeds are then planned on its upper confidence limit (`spread_upper_limit`), so that a small
    pilot's lucky low spread does not promise a power the study will not deliver. `fail_alpha`:
    the level a fail is called at, when lower than alpha (Holm's first step across legs)."""
    planned = spread_upper_limit(sigma, sigma_df) if sigma_df else sigma
    for n in range(max(2, start), limit + 1):
        if outcome_probabilities(n, planned, margin, 0.0, alpha, paired, test)[PASS] < power:
            continue
        if outcome_probabilities(n, planned, margin, 2 * margin, fail_alpha or alpha, paired, test)[FAIL] >= power:
            return n
    return None


def stage2_pass_probability(n: int, sigma: float, margin: float, delta: float, shortfall_low: float,
                            shortfall_high: float, test: str = EQUIVALENCE, direction: str = "minimize") -> float:
    """P(pass at stage 2) of the two-stage design (verdict/two_stage.py) with `n` fresh paired seeds whose
    per-seed differences have SD `sigma` and true mean `delta`, given what stage 1 left: each side's
    combined test needs this stage's own z to reach `shortfall` (sqrt 2 c - z_1 of that side). A side's z
    reaches it when its paired t reaches the t quantile at the matching one-sided level; integrated over
    the sample SD as `outcome_probabilities` is."""
    if n < 2 or sigma <= 0:
        return 0.0
    se = sigma / math.sqrt(n)
    s = se * _sd_factors(n - 1)                          # the stage's standard error, per SD quantile
    q_low = _t_ppf(_sp.ndtr(shortfall_low), n - 1)       # t the low side needs (level Phi(-shortfall))
    q_high = _t_ppf(_sp.ndtr(shortfall_high), n - 1)
    low, high = -margin + q_low * s, margin - q_high * s  # where the stage's mean difference must lie
    worse_high = direction == "minimize"
    if test != EQUIVALENCE:  # non-inferiority: only the worse side's bound
        if worse_high:
            low = np.full_like(high, -np.inf)
        else:
            high = np.full_like(low, np.inf)
    prob = np.clip(_sp.ndtr((high - delta) / se) - _sp.ndtr((low - delta) / se), 0, None)
    return float(np.mean(prob))


def stage2_seeds(sigma: float, margin: float, shortfall_low: float, shortfall_high: float, power: float,
                 test: str = EQUIVALENCE, direction: str = "minimize", sigma_df: int | None = None,
                 limit: int = MAX_RECOMMENDED_SEEDS) -> int | None:
    """Fewest fresh seeds per leg for stage 2 to pass legs that truly agree with probability >= `power`
    (the conditional power given stage 1), planned on the upper confidence limit of the SD when it is
    an estimate on `sigma_df` degrees of freedom. None when `limit` seeds do not reach it."""
    planned = spread_upper_limit(sigma, sigma_df) if sigma_df else sigma
    for n in range(2, limit + 1):
        if stage2_pass_probability(n, planned, margin, 0.0, shortfall_low, shortfall_high, test, direction) >= power:
            return n
    return None
