"""verdict/two_stage.py: the two-stage design every fixed-seed decision belongs to (Pocock boundaries,
inverse-normal combination), against its definition and by simulation of the shipped functions."""
import math

import numpy as np
import pytest
from scipy import stats as st

from bakeoff_runtime.verdict import stats, two_stage


def test_the_critical_value_spends_exactly_alpha_over_both_stages():
    c = two_stage.critical(0.05)
    # P0(z1 >= c) + P0(z1 < c, (z1 + z2)/sqrt2 >= c), by an independent bivariate-normal computation.
    both = st.multivariate_normal(mean=[0, 0], cov=[[1, 1 / math.sqrt(2)], [1 / math.sqrt(2), 1]])
    total = 1 - both.cdf([c, c])  # P(z1 >= c or Z >= c)
    assert total == pytest.approx(0.05, abs=1e-5)
    assert c == pytest.approx(1.8754, abs=5e-4) and two_stage.stage1_level(0.05) == pytest.approx(0.0304, abs=2e-4)
    assert two_stage.stage1_level(0.05, two_stage.FIXED) == 0.05


def _compare(diffs, margin, alpha):
    n = len(diffs)
    return stats.compare(dict.fromkeys(range(n), 10.0), {s: 10.0 + d for s, d in enumerate(diffs)},
                         margin=margin, alpha=alpha)


def test_a_stage_2_interval_is_the_set_neither_combined_test_rejects():
    rng = np.random.default_rng(3)
    first = two_stage.stage_record({**_compare(list(rng.normal(0.3, 1, 3)), 1.0, 0.0304), "name": "parity:a~b"})
    r = _compare(list(rng.normal(0.3, 1, 9)), 1.0, 0.05)
    out = two_stage.stage2(r, first, 0.05, 1.0, stats.EQUIVALENCE, "minimize")
    lo, hi = out["ci"]
    c = two_stage.critical(0.05)
    own = {k: out["stage2_alone"][k] for k in ("diff", "se", "df", "n_pairs", "skewness")}
    assert two_stage.combined_z(first, own, lo, "low") == pytest.approx(c, abs=1e-6)
    assert two_stage.combined_z(first, own, hi, "high") == pytest.approx(c, abs=1e-6)
    assert lo < out["diff"] < hi and out["ci_basis"] == "two-stage"


def test_deciding_both_stages_keeps_alpha_where_deciding_twice_does_not():
    """Legs worse by exactly the margin, normal differences, 3 seeds then 6 fresh ones: the two-stage
    design passes them at most alpha (+2 SE); two fixed decisions at full alpha, the second on fresh seeds,
    pass them more often."""
    rng = np.random.default_rng(11)
    reps, alpha, margin = 1000, 0.05, 1.0
    two, naive = 0, 0
    for _ in range(reps):
        s1, s2 = list(rng.normal(margin, 1, 3)), list(rng.normal(margin, 1, 6))
        r1 = _compare(s1, margin, two_stage.stage1_level(alpha))
        if r1["outcome"] == stats.PASS:
            two += 1
        elif r1["outcome"] == stats.INCONCLUSIVE:
            out = two_stage.stage2(_compare(s2, margin, alpha), two_stage.stage_record(r1), alpha, margin,
                                   stats.EQUIVALENCE, "minimize")
            two += out["outcome"] == stats.PASS
        f1 = _compare(s1, margin, alpha)["outcome"]
        naive += f1 == stats.PASS or (f1 == stats.INCONCLUSIVE and _compare(s2, margin, alpha)["outcome"] == stats.PASS)
    se = math.sqrt(alpha * (1 - alpha) / reps)
    assert two / reps <= alpha + 2 * se, two / reps
    assert naive / reps > two / reps
