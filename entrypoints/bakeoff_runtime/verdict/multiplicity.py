"""Holm's step-down correction of the verdict's `fail` claims: one family for every claim a fail rests on.

The verdict fails when any claim does: a leg's parity beyond the margin, or a leg breaking where the
baseline does not. With K legs against one baseline there are 2K such claims, and each tested at
alpha alone gives a family-wise false-fail rate near 2K * alpha: even one leg's parity and breakage
claims, as separate families each at alpha, reached 0.062-0.069 with 30% breakage on both legs. A
pass needs every leg to pass (an intersection-union test), which needs no correction: its error is
already at most alpha.

Holm (Scand. J. Statist. 6:65-70, 1979) controls the family-wise error at alpha for any dependence
between the claims (they share the baseline's seeds): sort the claims' p-values, the j-th smallest
(from 0) is confirmed when it and every smaller one is <= level / (m - j), m = 2K. A claim that fails
on its own but not after the correction is left undecided, with the numbers that show why. Each
claim's p is valid over its whole design: a two-stage design's stage-wise p (verdict/two_stage.py),
read against alpha; a sequential look's p, against the look's nominal level. A repeatable crash (the
same error on every seed, none on the baseline) is not a chance event and is not corrected.
"""
from __future__ import annotations

from typing import Any

from bakeoff_runtime.verdict import skew, stats

FAMILIES = {"parity": "its quality differs beyond the margin", "stability": "its training breaks more often"}


def _family(check: dict[str, Any]) -> str | None:
    kind = check["name"].split(":", 1)[0]
    return kind if kind in FAMILIES else None


def fail_p_value(check: dict[str, Any]) -> float | None:
    """The one-sided p-value behind a failed claim: for parity, of `the difference lies within the
    margin on the side it failed` (the TOST interval's bound beyond the margin, in p form); for
    breakage, the exact McNemar p; a two-stage design's stage-wise p where the check carries one.
    None: not a chance claim (a repeatable crash)."""
    if check["name"].startswith("stability:"):
        counts = check.get("breakage") or {}
        return counts.get("fail_p", counts.get("p_value"))
    if check.get("fail_p") is not None:
        return float(check["fail_p"])
    diff, se, margin = check.get("diff"), check.get("se"), check.get("margin")
    if diff is None or margin is None:
        return None
    if not se:
        return 0.0  # a point interval beyond the margin (no spread and no step to floor it at)
    # As the interval reads it: the larger of the t and Hall's skewness-corrected p on each side (skew.py).
    beyond_high = skew.p_side(check, margin, "low", stats.t_cdf)    # H0: diff <= +margin
    beyond_low = skew.p_side(check, -margin, "high", stats.t_cdf)   # H0: diff >= -margin
    test = stats.test_of(check.get("test_kind") or stats.EQUIVALENCE)
    return test.fail_p_value(beyond_high, beyond_low, check.get("direction", "minimize"))


def claims_of(counted_legs: int) -> int:
    """The claims a fail can rest on: a parity and a breakage claim per leg compared."""
    return len(FAMILIES) * max(1, counted_legs)


def apply(checks: list[dict[str, Any]], counted_legs: int, alpha: float | None = None) -> None:
    """Correct the failed parity and breakage claims in `checks` (in place), one family of
    `claims_of(counted_legs)`; a claim not confirmed becomes inconclusive."""
    m = claims_of(counted_legs)
    claims = []
    for c in checks:
        if _family(c) is None or c["status"] != "failed" or not c.get("counts_toward_verdict", True):
            continue
        p = fail_p_value(c)
        if p is not None:
            claims.append((p, c))
    claims.sort(key=lambda pc: (pc[0], pc[1]["name"]))
    confirmed = True
    for rank, (p, c) in enumerate(claims):
        level = float(c.get("holm_level") or (c.get("breakage") or {}).get("alpha") or alpha or c.get("alpha")
                      or 0.05)
        threshold = level / (m - rank)
        confirmed = confirmed and p <= threshold
        c["holm"] = {"p_value": p, "rank": rank + 1, "claims": m, "legs": counted_legs, "threshold": threshold,
                     "confirmed": confirmed}
        if confirmed:
            continue
        family = _family(c)
        assert family is not None
        c["status"], c["passed"] = "inconclusive", False
        c["outcome"] = stats.INCONCLUSIVE if family == "parity" else c.get("outcome")
        c["why"] += (f"; but not shown once every claim a fail could rest on is counted ({m}: parity and breakage "
                     f"of {counted_legs} leg(s)): Holm's correction needs p <= {threshold:.3g} for this claim (rank "
                     f"{rank + 1} of {m}), it has p={p:.3g}")
        c["recommendation"] = {"seeds": None, "why": (
            f"more seeds of this question on {c['name'].split(':', 1)[1]} would show whether {FAMILIES[family]}: "
            f"this evidence holds for one claim at a time, not for {m}")}
