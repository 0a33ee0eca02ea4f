"""The statistics against values computed another way (scipy's own tests, by hand)."""
import math

import pytest
from scipy import stats as st

from bakeoff_runtime import stats


def test_describe_known_values():
    d = stats.describe([1.0, 2.0, 3.0, 4.0])
    assert d["mean"] == 2.5
    assert d["std"] == pytest.approx(math.sqrt(5 / 3))
    assert d["cv"] == pytest.approx(math.sqrt(5 / 3) / 2.5)
    half = st.t.ppf(0.975, 3) * math.sqrt(5 / 3) / 2
    assert d["ci95"] == pytest.approx([2.5 - half, 2.5 + half])
    assert stats.describe([7.0])["std"] is None


@pytest.mark.parametrize("a,b,margin", [
    ([2.40, 2.42, 2.41], [2.43, 2.41, 2.44], 0.05),
    ([2.40, 2.42, 2.41], [2.60, 2.61, 2.58], 0.05),
    ([1.0, 1.3, 0.8, 1.1], [1.05, 1.2], 0.5),
])
def test_tost_matches_two_shifted_welch_tests(a, b, margin):
    r = stats.tost(a, b, -margin, margin, alpha=0.05)
    # H0: mean(b) - mean(a) <= -margin, tested as b + margin vs a, one-sided.
    p_low = st.ttest_ind([x + margin for x in b], a, equal_var=False, alternative="greater").pvalue
    p_high = st.ttest_ind([x - margin for x in b], a, equal_var=False, alternative="less").pvalue
    assert r["p_lower"] == pytest.approx(p_low, rel=1e-9)
    assert r["p_upper"] == pytest.approx(p_high, rel=1e-9)
    assert r["p_value"] == pytest.approx(max(p_low, p_high), rel=1e-9)
    assert r["equivalent"] == (max(p_low, p_high) < 0.05)


def test_tost_known_answer():
    # Hand-computed: diff 0.01, se sqrt(2 * 1e-4 / 3), Welch df 4.
    a, b = [2.39, 2.40, 2.41], [2.40, 2.41, 2.42]
    r = stats.tost(a, b, -0.05, 0.05)
    se = math.sqrt(2 * 1e-4 / 3)
    assert r["diff"] == pytest.approx(0.01)
    assert r["df"] == pytest.approx(4.0)
    assert r["p_upper"] == pytest.approx(st.t.cdf((0.01 - 0.05) / se, 4))
    assert r["equivalent"] is True
    # The 90% CI lies inside the margin exactly when TOST at alpha=0.05 passes.
    lo, hi = r["ci"]
    assert -0.05 < lo < hi < 0.05


def test_tost_rejects_a_clear_difference_and_needs_two_replicates():
    assert stats.tost([1.0, 1.01, 0.99], [1.5, 1.52, 1.49], -0.1, 0.1)["equivalent"] is False
    with pytest.raises(ValueError, match="at least 2 replicates"):
        stats.tost([1.0], [1.0, 1.1], -0.1, 0.1)


def test_tost_zero_variance():
    assert stats.tost([1.0, 1.0], [1.02, 1.02], -0.05, 0.05)["equivalent"] is True
    assert stats.tost([1.0, 1.0], [1.2, 1.2], -0.05, 0.05)["equivalent"] is False


def test_bootstrap_ci_brackets_the_difference_and_is_reproducible():
    a, b = [2.40, 2.42, 2.41, 2.43], [2.50, 2.52, 2.49, 2.51]
    ci = stats.bootstrap_diff_ci(a, b)
    assert ci[0] < 0.09 < ci[1]
    assert 0.05 < ci[0] and ci[1] < 0.13
    assert stats.bootstrap_diff_ci(a, b) == ci
    assert stats.bootstrap_diff_ci([1.0], b) is None
