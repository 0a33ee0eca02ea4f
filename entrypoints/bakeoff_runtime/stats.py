"""The statistics behind a parity verdict: Welch-based TOST, bootstrap CIs, spread.

Equivalence is tested, never assumed: a pair of legs is at parity only when both
one-sided tests reject at `alpha` against a margin fixed before the runs.
"""
from __future__ import annotations

import math
from statistics import fmean, stdev, variance
from typing import Sequence

from scipy import stats as _st


def describe(values: Sequence[float]) -> dict:
    vals = [float(v) for v in values]
    n = len(vals)
    if n == 0:
        return {"n": 0, "mean": None, "std": None, "min": None, "max": None, "cv": None, "ci95": None}
    mean = fmean(vals)
    sd = stdev(vals) if n > 1 else None
    ci = None
    if n > 1:
        half = _st.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
        ci = [mean - half, mean + half]
    cv = (sd / abs(mean)) if sd is not None and mean != 0 else None
    return {"n": n, "mean": mean, "std": sd, "min": min(vals), "max": max(vals), "cv": cv, "ci95": ci,
            "values": vals}


def welch(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float]:
    """Difference of means (b - a), its standard error and Welch-Satterthwaite df."""
    na, nb = len(a), len(b)
    va, vb = variance(a), variance(b)
    diff = fmean(b) - fmean(a)
    sa, sb = va / na, vb / nb
    se = math.sqrt(sa + sb)
    if se == 0:
        return diff, 0.0, float(na + nb - 2)
    df = (sa + sb) ** 2 / (sa ** 2 / (na - 1) + sb ** 2 / (nb - 1))
    return diff, se, df


def tost(a: Sequence[float], b: Sequence[float], low: float, high: float, alpha: float = 0.05) -> dict:
    """Two one-sided Welch t-tests of low < mean(b) - mean(a) < high."""
    if len(a) < 2 or len(b) < 2:
        raise ValueError("TOST needs at least 2 replicates per group")
    diff, se, df = welch(a, b)
    if se == 0:
        inside = low < diff < high
        p_low = p_high = 0.0 if inside else 1.0
        ci = [diff, diff]
    else:
        p_low = float(_st.t.sf((diff - low) / se, df))    # H0: diff <= low
        p_high = float(_st.t.cdf((diff - high) / se, df))  # H0: diff >= high
        half = float(_st.t.ppf(1 - alpha, df)) * se
        ci = [diff - half, diff + half]
    p = max(p_low, p_high)
    return {"diff": diff, "se": se, "df": df, "p_lower": p_low, "p_upper": p_high, "p_value": p,
            "alpha": alpha, "bounds": [low, high], "ci": ci, "ci_level": 1 - 2 * alpha,
            "equivalent": bool(p < alpha)}


def bootstrap_diff_ci(a: Sequence[float], b: Sequence[float], confidence: float = 0.95,
                      resamples: int = 10_000, seed: int = 0) -> list[float] | None:
    """Percentile bootstrap CI of mean(b) - mean(a), resampling each group."""
    import numpy as np

    if len(a) < 2 or len(b) < 2:
        return None
    rng = np.random.default_rng(seed)
    a_arr, b_arr = np.asarray(a, float), np.asarray(b, float)
    ma = a_arr[rng.integers(0, len(a_arr), (resamples, len(a_arr)))].mean(axis=1)
    mb = b_arr[rng.integers(0, len(b_arr), (resamples, len(b_arr)))].mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    lo, hi = np.percentile(mb - ma, [tail, 100 - tail])
    return [float(lo), float(hi)]
