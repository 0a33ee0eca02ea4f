"""The statistical tests a parity rule can name (`parity.test`), one object each: its hypotheses
(which side of the margin a pass must show and a fail lies beyond), its decision on an interval,
its p-values, its planning and futility arithmetic, and how its result is worded.

Everything that differs between two tests is here, so a new test is one class added to TESTS (and
its name to the spec's `Parity.test` literal). The figures all live on the axis where positive is
worse than the baseline (the callers flip a `maximize` metric onto it), except where a method says.

A leaf module: stats.py and the report modules read it; the t distribution's CDF is handed in by
stats.py, which owns it. numpy is imported by the two methods that compute on arrays, so the report
(which only words a test) renders without it.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

TCdf = Callable[[Any, Any], Any]  # stats.t_cdf(x, df)


class ParityTest:
    """One test. Subclasses set the names and implement the hypotheses; the wording methods take
    a margin already formatted where the caller formats it."""

    name: str           # the spec's parity.test value
    label: str          # how a check's test_label names it: "<label>, paired t on ..."
    shown: str          # what a pass shows of every leg, in the headline: "every leg is <shown> <baseline>"
    passed_word: str    # a passing check's first word

    def decide(self, lo, hi, margin) -> tuple[Any, Any]:
        """(passed, failed) of the interval [lo, hi] (arrays or scalars) on the worse-positive axis."""
        raise NotImplementedError

    def p_values(self, diff: float, se: float, df: float, margin: float, direction: str,
                 t_cdf: TCdf) -> dict[str, float]:
        """The check's p-value fields (se > 0), from the difference leg - baseline as measured."""
        raise NotImplementedError

    def fail_p_value(self, beyond_high: float, beyond_low: float, direction: str) -> float:
        """The one-sided p behind a fail claim, from the p of each side's `beyond the margin`."""
        raise NotImplementedError

    def outcome_probabilities(self, norm: Callable[[Any], Any], margin: float, half, delta: float,
                              se: float) -> tuple[Any, Any]:
        """(P(pass), P(fail)) per CI half-width in `half`, for a true difference `delta` (worse-positive)."""
        raise NotImplementedError

    def futility_gap(self, worse):
        """How far the mean difference is from passing: what a futility look compares with the margin."""
        raise NotImplementedError

    # --- wording -----------------------------------------------------------------------------------
    def inside(self, margin: str, worse_sign: str) -> str:
        """Where a passing interval lies."""
        raise NotImplementedError

    def undecided_region(self, margin: str, worse_sign: str) -> str:
        """What an undecided interval crosses."""
        raise NotImplementedError

    def margin_text(self, margin: Any) -> str:
        """The margin as the report's rule states it."""
        raise NotImplementedError

    def pass_region(self, margin: float, worse_right: bool) -> str:
        """The pass region on the decision chart's axis (leg - baseline, worse to the right when `worse_right`)."""
        raise NotImplementedError

    def pass_span(self, margin: float, worse_right: bool, left: float, right: float) -> tuple[float, float]:
        """The chart's shaded pass region, clipped to the axis [left, right]."""
        raise NotImplementedError


class Equivalence(ParityTest):
    """TOST: pass when the interval lies inside (-margin, +margin), fail when it lies wholly beyond one
    side. H0 of each one-sided test: the difference is at or beyond that side's margin."""

    name, label, shown, passed_word = "equivalence", "TOST", "equivalent to", "equivalent"

    def decide(self, lo, hi, margin):
        return (lo > -margin) & (hi < margin), (lo > margin) | (hi < -margin)

    def p_values(self, diff, se, df, margin, direction, t_cdf):
        # Symmetric in the margin, so on the difference as measured (direction plays no part).
        low, high = -margin, margin
        p_low = float(t_cdf(-(diff - low) / se, df))
        p_high = float(t_cdf((diff - high) / se, df))
        return {"p_lower": p_low, "p_upper": p_high, "p_value": max(p_low, p_high)}

    def fail_p_value(self, beyond_high, beyond_low, direction):
        return min(beyond_high, beyond_low)

    def outcome_probabilities(self, norm, margin, half, delta, se):
        import numpy as np

        p_pass = np.clip(norm((margin - half - delta) / se) - norm((-margin + half - delta) / se), 0, None)
        p_fail = norm((-margin - half - delta) / se) + (1 - norm((margin + half - delta) / se))
        return p_pass, p_fail

    def futility_gap(self, worse):
        import numpy as np

        return np.abs(worse)

    def inside(self, margin, worse_sign):
        return f"inside +/-{margin}"

    def undecided_region(self, margin, worse_sign):
        return f"+/-{margin}"

    def margin_text(self, margin):
        return f"+/-{margin}"

    def pass_region(self, margin, worse_right):
        return f"-{margin:.4g} to +{margin:.4g}"

    def pass_span(self, margin, worse_right, left, right):
        return -margin, margin


class NonInferiority(ParityTest):
    """Pass when the interval lies below the margin on the worse side, fail when it lies wholly beyond
    it; a leg better than the baseline never fails. H0: the leg is worse by the margin or more."""

    name, label, shown, passed_word = "non_inferiority", "non-inferiority", "no worse than", "not worse"

    def decide(self, lo, hi, margin):
        return hi < margin, lo > margin

    def p_values(self, diff, se, df, margin, direction, t_cdf):
        worse = diff if direction == "minimize" else -diff
        return {"p_value": float(t_cdf((worse - margin) / se, df))}

    def fail_p_value(self, beyond_high, beyond_low, direction):
        return beyond_high if direction == "minimize" else beyond_low

    def outcome_probabilities(self, norm, margin, half, delta, se):
        return norm((margin - half - delta) / se), 1 - norm((margin + half - delta) / se)

    def futility_gap(self, worse):
        return worse

    def inside(self, margin, worse_sign):
        return f"below the non-inferiority margin {worse_sign}{margin}"

    def undecided_region(self, margin, worse_sign):
        return f"the margin {worse_sign}{margin}"

    def margin_text(self, margin):
        return f"{margin}"

    def pass_region(self, margin, worse_right):
        return f"below +{margin:.4g}" if worse_right else f"above -{margin:.4g}"

    def pass_span(self, margin, worse_right, left, right):
        return (left, margin) if worse_right else (-margin, right)


TESTS: dict[str, ParityTest] = {t.name: t for t in (Equivalence(), NonInferiority())}
EQUIVALENCE, NON_INFERIORITY = "equivalence", "non_inferiority"  # the names, for callers that default to one


def test_of(name: str) -> ParityTest:
    """The test a rule names; an unknown name is an error naming the ones there are."""
    try:
        return TESTS[name]
    except KeyError:
        raise ValueError(f"unknown parity test {name!r} ({', '.join(TESTS)})") from None
