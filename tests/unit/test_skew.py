"""verdict/skew.py: Hall's skewness-corrected t read beside the plain t (the wider bound on each side)."""
import math

import numpy as np
import pytest
from scipy import stats as st

from bakeoff_runtime.verdict import skew, stats


def test_without_skewness_hall_is_the_t_interval():
    lo, hi = skew.hall_bounds(0.3, 0.2, 8, 0.0, 2.0)
    assert (lo, hi) == pytest.approx((0.3 - 2.0 * 0.2 / math.sqrt(8), 0.3 + 2.0 * 0.2 / math.sqrt(8)))


def test_skewness_is_scipys_biased_sample_skewness():
    x = [0.1, 0.4, 0.35, 1.9, 0.2, 0.05]
    assert skew.skewness(x) == pytest.approx(st.skew(x, bias=True))
    assert skew.skewness([1.0, 2.0]) == 0.0 and skew.skewness([3.0, 3.0, 3.0]) == 0.0


def test_three_values_never_show_skew_and_the_band_is_the_normal_one():
    # |g| of three values is at most 1/sqrt(2): under the 90% band's 0.82, so never "visible".
    assert not skew.visible(1 / math.sqrt(2), 3)
    assert skew.sd_under_normality(10) == pytest.approx(math.sqrt(6 * 8 / (11 * 13)))
    rng = np.random.default_rng(1)
    g = [skew.skewness(list(rng.normal(0, 1, 10))) for _ in range(4000)]
    share = np.mean([skew.visible(v, 10) for v in g])
    assert 0.07 < share < 0.13  # about 10% of normal samples by construction


def test_right_skew_moves_both_bounds_up_and_the_p_values_match_the_interval():
    d = [0.01, 0.0, 0.02, 0.015, 0.2, 0.005, 0.01, 0.012]  # one late bad seed: right skew
    r = stats.compare(dict.fromkeys(range(8), 1.0), {s: 1.0 + x for s, x in enumerate(d)}, margin=0.12, alpha=0.05)
    assert r["skew_visible"] and r["skew_widened"]
    (lo_t, hi_t), (lo_h, hi_h) = r["ci_t"], r["ci_skew_corrected"]
    assert lo_h > lo_t and hi_h > hi_t and r["ci"] == [lo_t, hi_h]
    # The one-sided p at the interval's own upper bound is alpha: the p reads the interval.
    at_bound = skew.p_side(r, r["ci"][1], "high", stats.t_cdf)
    assert at_bound == pytest.approx(0.05, abs=1e-6)
    # Under the t alone this passes; with the skew guard the long tail keeps it undecided.
    assert hi_t < 0.12 < hi_h and r["outcome"] == "inconclusive"


def test_the_guard_never_passes_or_fails_what_the_t_interval_would_not():
    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(3, 15))
        d = rng.lognormal(0, 1, n) - 1.3
        r = stats.compare(dict.fromkeys(range(n), 5.0), {s: 5.0 + x for s, x in enumerate(d)}, margin=1.0, alpha=0.05)
        t_out = stats.decide(*r["ci_t"], 1.0)
        assert r["outcome"] == t_out or r["outcome"] == "inconclusive"
        assert r["ci"][0] <= r["ci_t"][0] and r["ci"][1] >= r["ci_t"][1]
