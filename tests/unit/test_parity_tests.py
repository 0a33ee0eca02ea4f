"""One object per statistical test (bakeoff_runtime/verdict/parity_tests.py): the registry the rule's `parity.test`
names, and each test's hypotheses as the decision, the p-values and the planning read them."""
import numpy as np
import pytest

from bakeoff_runtime.verdict import parity_tests, stats


def test_the_registry_holds_every_test_the_spec_can_name():
    from typing import get_args

    from bakeoff.pipelines.spec.model import Parity

    assert set(parity_tests.TESTS) == set(get_args(Parity.model_fields["test"].annotation))
    with pytest.raises(ValueError, match=r"unknown parity test 'superiority' \(equivalence, non_inferiority\)"):
        stats.decide(0.0, 0.1, 0.05, "superiority")


@pytest.mark.parametrize(("test", "expected"), [
    # intervals (worse-positive): inside the band, straddling +margin, beyond +margin, beyond -margin
    ("equivalence", ["pass", "inconclusive", "fail", "fail"]),
    ("non_inferiority", ["pass", "inconclusive", "fail", "pass"]),  # a better leg never fails
])
def test_each_test_decides_on_its_own_hypotheses(test, expected):
    lo, hi = np.array([-0.02, 0.01, 0.06, -0.2]), np.array([0.02, 0.08, 0.1, -0.1])
    assert stats.decide(lo, hi, 0.05, test).tolist() == expected
    # A metric to maximize is the same decision on the flipped axis.
    assert stats.decide(-hi, -lo, 0.05, test, "maximize").tolist() == expected


def test_the_p_values_are_those_of_each_tests_null_hypotheses():
    t = stats.t_cdf
    eq = parity_tests.TESTS["equivalence"].p_values(0.01, 0.02, 4.0, 0.05, "minimize", t)
    low, high = stats.tost_p_values(0.01, 0.02, 4.0, -0.05, 0.05)
    assert eq == {"p_lower": low, "p_upper": high, "p_value": max(low, high)}
    ni = parity_tests.TESTS["non_inferiority"]
    # H0: worse by the margin or more; on a maximized metric the worse side is the lower one.
    assert ni.p_values(0.01, 0.02, 4.0, 0.05, "minimize", t) == {"p_value": float(t((0.01 - 0.05) / 0.02, 4.0))}
    assert ni.p_values(-0.01, 0.02, 4.0, 0.05, "maximize", t) == {"p_value": float(t((0.01 - 0.05) / 0.02, 4.0))}


def test_a_one_sided_test_passes_more_often_than_tost_at_the_same_seeds():
    # The same spread and seeds: showing `not worse` needs one bound, equivalence two.
    eq = stats.outcome_probabilities(5, 0.03, 0.05, 0.0, 0.05, True, "equivalence")["pass"]
    ni = stats.outcome_probabilities(5, 0.03, 0.05, 0.0, 0.05, True, "non_inferiority")["pass"]
    assert 0 < eq < ni < 1
