"""The statistics against independent implementations (scipy, statsmodels) on known inputs,
and the power function against a simulation of the very decision rule it describes."""
import math

import numpy as np
import pytest
from scipy import stats as st

from bakeoff_runtime.verdict import stats


def test_describe_known_values():
    d = stats.describe([1.0, 2.0, 3.0, 4.0])
    assert d["mean"] == 2.5
    assert d["std"] == pytest.approx(math.sqrt(5 / 3))
    assert d["cv"] == pytest.approx(math.sqrt(5 / 3) / 2.5)
    half = st.t.ppf(0.975, 3) * math.sqrt(5 / 3) / 2
    assert d["ci95"] == pytest.approx([2.5 - half, 2.5 + half])
    assert stats.describe([7.0])["std"] is None


PAIRED_CASES = [
    ({0: 2.40, 1: 2.45, 2: 2.38}, {0: 2.41, 1: 2.47, 2: 2.38}, 0.05),
    ({0: 2.40, 1: 2.45, 2: 2.38, 3: 2.50}, {0: 2.52, 1: 2.58, 2: 2.49, 3: 2.61}, 0.05),
    ({0: 1.0, 1: 1.3, 2: 0.8}, {0: 1.02, 1: 1.1, 2: 0.95}, 0.5),
]


@pytest.mark.parametrize("base,leg,margin", PAIRED_CASES)
def test_paired_tost_matches_statsmodels(base, leg, margin):
    from statsmodels.stats.weightstats import ttost_paired  # here: its import is half a second of collection

    r = stats.compare(base, leg, margin=margin, alpha=0.05)
    seeds = sorted(base)
    p, lower, upper = ttost_paired(np.array([leg[s] for s in seeds]), np.array([base[s] for s in seeds]),
                                   -margin, margin)
    assert r["test"] == "paired" and r["n_pairs"] == len(seeds)
    assert r["p_lower"] == pytest.approx(lower[1], rel=1e-9)
    assert r["p_upper"] == pytest.approx(upper[1], rel=1e-9)
    assert r["p_value"] == pytest.approx(p, rel=1e-9)
    # The 90% CI inside the margin is the same decision as both one-sided tests rejecting at 5%.
    assert (r["outcome"] == "pass") == (p < 0.05)


def test_paired_interval_is_the_t_interval_of_the_differences():
    d = [0.01, 0.03, -0.02, 0.00, 0.02]
    r = stats.paired_interval(d, alpha=0.05)
    lo, hi = st.t.interval(0.90, len(d) - 1, loc=np.mean(d), scale=st.sem(d))
    assert r["ci"] == pytest.approx([lo, hi], rel=1e-12)
    assert r["df"] == 4 and r["ci_level"] == pytest.approx(0.90)


def test_welch_is_used_only_for_what_cannot_be_paired_and_matches_statsmodels():
    from statsmodels.stats.weightstats import ttost_ind

    base, leg = {0: 2.40, 1: 2.42, 2: 2.41}, {5: 2.43, 6: 2.41, 7: 2.44}
    r = stats.compare(base, leg, margin=0.05, alpha=0.05)
    assert r["test"] == "welch" and r["n_pairs"] == 0
    assert r["seeds_unpaired"] == {"leg": [5, 6, 7], "baseline": [0, 1, 2]}
    p, lower, upper = ttost_ind(np.array(list(leg.values())), np.array(list(base.values())), -0.05, 0.05,
                                usevar="unequal")
    assert r["p_value"] == pytest.approx(p, rel=1e-9)
    lo, hi = r["ci"]
    diff, se, df = stats.welch(list(base.values()), list(leg.values()))
    assert st.ttest_ind(list(leg.values()), list(base.values()), equal_var=False).df == pytest.approx(df)
    assert hi - lo == pytest.approx(2 * st.t.ppf(0.95, df) * se)


def test_pairing_beats_welch_when_seeds_move_both_legs_together():
    # Seed-to-seed spread 0.1, leg-to-leg difference ~1e-6: Welch cannot see through the spread.
    base = {s: 2.0 + 0.1 * s for s in range(3)}
    leg = {s: v + 1e-6 * (-1) ** s for s, v in base.items()}
    paired = stats.compare(base, leg, margin=0.02, alpha=0.05)
    assert paired["outcome"] == "pass" and paired["p_value"] < 1e-6
    welch = stats.welch_interval(list(base.values()), list(leg.values()), 0.05)
    assert welch["ci"][0] < -0.02 and welch["ci"][1] > 0.02  # unpaired: would not have decided


def test_three_outcomes():
    base = {s: 2.0 + 0.05 * s for s in range(4)}
    same = {s: v + d for (s, v), d in zip(base.items(), [0.001, -0.002, 0.0, 0.001], strict=False)}
    worse = {s: v + d for (s, v), d in zip(base.items(), [0.30, 0.31, 0.29, 0.30], strict=False)}
    noisy = {s: v + d for (s, v), d in zip(base.items(), [0.15, -0.12, 0.10, -0.09], strict=False)}
    assert stats.compare(base, same, margin=0.05, alpha=0.05)["outcome"] == "pass"
    r = stats.compare(base, worse, margin=0.05, alpha=0.05)
    assert r["outcome"] == "fail" and r["worse"] and r["ci"][0] > 0.05
    assert stats.compare(base, noisy, margin=0.05, alpha=0.05)["outcome"] == "inconclusive"


def test_non_inferiority_lets_a_better_leg_pass_and_equivalence_does_not():
    base = {s: 2.0 + 0.05 * s for s in range(4)}
    better = {s: v - 0.3 + 0.001 * s for s, v in base.items()}
    eq = stats.compare(base, better, margin=0.05, alpha=0.05, test="equivalence")
    ni = stats.compare(base, better, margin=0.05, alpha=0.05, test="non_inferiority")
    assert eq["outcome"] == "fail" and eq["better"]
    assert ni["outcome"] == "pass" and ni["better"]
    # For a metric to maximise, lower is worse.
    acc_base = {s: 0.80 + 0.01 * s for s in range(4)}
    acc_worse = {s: v - 0.2 + 0.01 * (-1) ** s * s for s, v in acc_base.items()}
    r = stats.compare(acc_base, acc_worse, margin=0.05, alpha=0.05, test="non_inferiority", direction="maximize")
    assert r["outcome"] == "fail" and r["worse"]
    # Non-inferiority's p is the one-sided t test against the margin, as statsmodels' upper test.
    seeds = sorted(acc_base)
    d = np.array([acc_worse[s] - acc_base[s] for s in seeds])
    expected = st.ttest_1samp(d + 0.05, 0.0, alternative="greater").pvalue
    assert r["p_value"] == pytest.approx(expected, rel=1e-9)


def test_identical_legs_pass_on_an_interval_floored_at_the_metric_step():
    base = {0: 2.41324, 1: 2.50187, 2: 2.33011}
    r = stats.compare(base, dict(base), margin=0.01, alpha=0.05)
    assert r["identical"] and r["outcome"] == "pass" and r["sd_floored"] and r["step"] == pytest.approx(1e-5)
    lo, hi = r["ci"]
    assert lo < 0 < hi and hi - lo < 1e-4 and r["p_value"] is not None


def test_equal_differences_never_decide_on_a_point_interval():
    # Accuracy on 100 examples: two seeds whose differences came out equal, a sample SD of 0.
    r = stats.compare({0: 0.91, 1: 0.88}, {0: 0.92, 1: 0.89}, margin=0.02, alpha=0.05)
    assert r["sd_observed"] == pytest.approx(0, abs=1e-12) and r["sd_floored"] and r["step"] == pytest.approx(0.01)
    lo, hi = r["ci"]
    assert hi - lo > 0.03 and r["outcome"] == "inconclusive"  # it was `pass` on the point [0.01, 0.01]
    # Beyond the margin by less than the rounding can explain: not a `fail` either.
    r = stats.compare({0: 0.91, 1: 0.88}, {0: 0.94, 1: 0.91}, margin=0.02, alpha=0.05)
    assert r["outcome"] == "inconclusive"
    # A stated resolution is the step, whatever decimals the values carry.
    r = stats.compare({0: 0.91, 1: 0.88}, {0: 0.92, 1: 0.89}, margin=0.02, alpha=0.05, resolution=0.001)
    assert r["step"] == 0.001 and r["step_basis"] == "parity.resolution"


def test_a_metric_that_is_zero_everywhere_is_not_decided_without_a_resolution():
    r = stats.compare({0: 0.0, 1: 0.0}, {0: 0.0, 1: 0.0}, margin=0.02, alpha=0.05)
    assert r["outcome"] == "inconclusive" and r["no_step"] and "parity.resolution" in r["why_short"]
    assert stats.compare({0: 0.0, 1: 0.0}, {0: 0.0, 1: 0.0}, margin=0.02, alpha=0.05,
                         resolution=0.001)["outcome"] == "pass"


def test_too_few_seeds_is_inconclusive():
    r = stats.compare({0: 1.0}, {0: 1.0}, margin=0.1, alpha=0.05)
    assert r["test"] is None and r["outcome"] == "inconclusive"


@pytest.mark.parametrize("n,delta", [(3, 0.0), (5, 0.0), (5, 1.0), (4, 2.0)])
def test_power_function_matches_a_simulation_of_the_shipped_rule(n, delta):
    sigma, margin, alpha = 0.5, 1.0, 0.05
    rng = np.random.default_rng(7)
    d = rng.normal(delta, sigma, (40_000, n))
    mean, sd = d.mean(1), d.std(1, ddof=1)
    half = st.t.ppf(1 - alpha, n - 1) * sd / math.sqrt(n)
    outcome = stats.decide(mean - half, mean + half, margin)
    exact = stats.outcome_probabilities(n, sigma, margin, delta, alpha)
    for k in ("pass", "fail", "inconclusive"):
        assert exact[k] == pytest.approx((outcome == k).mean(), abs=0.01)


def test_a_true_difference_at_the_margin_passes_at_most_alpha():
    for n in (2, 3, 5, 8, 20):
        assert stats.outcome_probabilities(n, 1.0, 1.0, 1.0, 0.05)["pass"] <= 0.05 + 1e-9


def test_seeds_for_power_reaches_the_power_and_no_fewer_do():
    n = stats.seeds_for_power(0.04, 0.1, 0.05, power=0.8)
    assert stats.outcome_probabilities(n, 0.04, 0.1, 0.0, 0.05)["pass"] >= 0.8
    assert stats.outcome_probabilities(n, 0.04, 0.1, 0.2, 0.05)["fail"] >= 0.8
    assert stats.outcome_probabilities(n - 1, 0.04, 0.1, 0.0, 0.05)["pass"] < 0.8
    assert stats.seeds_for_power(10.0, 0.1, 0.05, limit=20) is None


def test_the_spread_is_planned_on_its_upper_confidence_limit():
    for df in (1, 2, 4, 9):
        assert stats.spread_upper_limit(1.0, df) == pytest.approx((df / st.chi2.ppf(0.2, df)) ** 0.5)
    # The limit covers the true SD in 80% of pilots: sample SDs of 3 seeds (df 2) from sigma = 1.
    rng = np.random.default_rng(7)
    sds = rng.normal(0, 1, (20000, 3)).std(1, ddof=1)
    covered = np.mean([stats.spread_upper_limit(float(s), 2) >= 1.0 for s in sds])
    assert abs(covered - 0.8) < 0.01, covered
    # A pilot plans more seeds than the same SD known exactly, and a stricter fail level no fewer.
    known = stats.seeds_for_power(0.04, 0.1, 0.05)
    assert stats.seeds_for_power(0.04, 0.1, 0.05, sigma_df=4) > known
    assert stats.seeds_for_power(0.04, 0.1, 0.05, fail_alpha=0.05 / 3) >= known


def test_the_outlier_check_flags_one_far_seed_and_rarely_normal_differences():
    far = stats.outlier([0.001, -0.002, 0.0, 0.001, 0.03], 0.05)
    assert far["index"] == 4 and far["p_value"] < 0.01 and far["pairs"] == 5
    assert stats.outlier([0.001, -0.002, 0.03], 0.05) is None  # too few seeds to leave one out
    rng = np.random.default_rng(11)
    for n in (4, 6, 10):
        samples = [list(rng.normal(0, 1, n)) for _ in range(3000)]
        found = [stats.outlier(d, 0.05) for d in samples]
        flagged = np.mean([f is not None for f in found])
        assert flagged <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 3000), (n, flagged)
        # The check's own level, 0.01, over the same 3000 samples: what it flags has p <= 0.01 < 0.05, so the
        # check flagged it at 0.05 above. It is asked again of those samples alone (half the calls: the check
        # is most of this test's time); the others count as not flagged.
        shipped = [stats.outlier(d) for d, f in zip(samples, found, strict=True) if f is not None]
        assert all(s is None or s["p_value"] <= stats.OUTLIER_ALPHA for s in shipped)
        shipped_rate = sum(s is not None for s in shipped) / len(samples)
        assert shipped_rate <= stats.OUTLIER_ALPHA + 2 * math.sqrt(0.01 * 0.99 / 3000), (n, shipped_rate)
    assert stats.unseen_rate(3, 0.05) == pytest.approx(1 - 0.05 ** (1 / 3))


def test_a_declared_step_widens_the_interval_by_half_its_lattice_and_holds_alpha_at_the_margin():
    base, leg = {0: 0.850, 1: 0.865, 2: 0.840, 3: 0.855, 4: 0.860}, {0: 0.845, 1: 0.865, 2: 0.830, 3: 0.850, 4: 0.850}
    plain = stats.compare(base, leg, margin=0.01, alpha=0.05, direction="maximize")
    declared = stats.compare(base, leg, margin=0.01, alpha=0.05, direction="maximize", resolution=1 / 200)
    assert plain["continuity_correction"] == 0.0
    assert declared["continuity_correction"] == pytest.approx(1 / 200 / 10)
    assert declared["ci"][1] - declared["ci"][0] == pytest.approx(plain["ci"][1] - plain["ci"][0] + 2 / 200 / 10)
    # Accuracy on 200 examples, 5 seeds, a per-seed spread of one example, the leg worse by the margin.
    rng, reps, passed = np.random.default_rng(3), 4000, 0
    for _ in range(reps):
        acc = 0.85 + rng.normal(0, 0.02, 5)
        b = np.round((acc + rng.normal(0, 0.005 / math.sqrt(2), 5)) * 200) / 200
        a = np.round((acc - 0.01 + rng.normal(0, 0.005 / math.sqrt(2), 5)) * 200) / 200
        r = stats.compare(dict(enumerate(b)), dict(enumerate(a)), margin=0.01, alpha=0.05, direction="maximize",
                          resolution=1 / 200)
        passed += r["outcome"] == stats.PASS
    assert passed / reps <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / reps), passed / reps


def test_a_metric_near_1e_11_has_a_step_of_its_own_size_not_one():
    from bakeoff_runtime.verdict.stats import metric_step, paired_interval

    values = [1.3e-11, 1.1e-11, 1.2e-11, 1.25e-11]
    step = metric_step(values)
    assert step is not None and step <= 1e-12, step
    assert metric_step([0.912, 0.905]) == 0.001 and metric_step([3.0, 4.0]) == 1.0  # as before
    ci = paired_interval([a - b for a, b in zip(values, [1.2e-11, 1.0e-11, 1.2e-11, 1.2e-11], strict=True)], 0.05,
                         step)
    assert ci["ci"][1] - ci["ci"][0] < 1e-10  # an interval on the metric's own scale


def test_the_step_is_the_lattice_the_values_sit_on_not_the_decimals_they_print():
    from bakeoff_runtime.verdict.stats import STEP_LATTICE, metric_step_of

    # Accuracy on 300 examples prints 0.9133333333333333: read by its decimals it had a step of 1e-16.
    acc = [274 / 300, 271 / 300, 280 / 300]
    step, basis = metric_step_of(acc)
    assert step == pytest.approx(1 / 300) and basis == STEP_LATTICE
    # Equal differences on such a metric are a chance tie: floored at the lattice, never a point interval.
    r = stats.compare({0: 271 / 300, 1: 265 / 300}, {0: 274 / 300, 1: 268 / 300}, margin=0.015, alpha=0.05)
    lo, hi = r["ci"]
    assert r["sd_floored"] and r["step"] == pytest.approx(1 / 300) and hi - lo > 0.01
    assert r["outcome"] == "inconclusive"  # it was `pass` on the point [0.01, 0.01]
    # A float loss sits on no lattice.
    rng = np.random.default_rng(5)
    losses = list(2.4 + rng.normal(0, 0.01, 6))
    step, basis = metric_step_of(losses)
    assert basis != STEP_LATTICE and step < 1e-6


def test_differences_equal_to_float_precision_never_decide_on_a_point_interval():
    rng = np.random.default_rng(6)
    base = {s: float(v) for s, v in enumerate(2.4 + rng.normal(0, 0.01, 4))}
    offset = {s: v + 0.003 for s, v in base.items()}  # the same offset on every seed, to float rounding
    r = stats.compare(base, offset, margin=0.05, alpha=0.05)
    assert r["outcome"] == "inconclusive" and r["no_step"] and "float precision" in r["why_short"]
    # Bit-identical legs are no offset: decided as before, on the interval floored at float precision.
    assert stats.compare(base, dict(base), margin=0.05, alpha=0.05)["outcome"] == "pass"
