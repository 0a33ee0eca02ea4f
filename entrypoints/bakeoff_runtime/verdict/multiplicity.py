"""Holm's step-down correction of the verdict's `fail` claims across the legs compared.

The verdict fails when any leg fails. With K legs against one baseline, each claim tested at
alpha alone gives a family-wise false-fail rate near K * alpha (about 0.12 with 3 legs at the
boundary). A pass needs every leg to pass (an intersection-union test), which needs no
correction: its error is already at most alpha.

Holm (Scand. J. Statist. 6:65-70, 1979) controls the family-wise error at alpha for any
dependence between the claims (here they share the baseline's seeds): sort the claims' p-values,
the j-th smallest (from 0) is confirmed when it and every smaller one is <= level / (K - j).
A claim that fails at alpha alone but not after the correction is left undecided, with the
numbers that show why. Each kind of claim (parity, breakage) is its own family, so a bake-off of
one leg decides exactly as before. A repeatable crash (the same error on every seed, none on
the baseline) is not a chance event and is not corrected.
"""
from __future__ import annotations

from typing import Any

from bakeoff_runtime.verdict import stats

FAMILIES = {"parity": "its quality differs beyond the margin", "stability": "its training breaks more often"}


def _family(check: dict[str, Any]) -> str | None:
    kind = check["name"].split(":", 1)[0]
    return kind if kind in FAMILIES else None


def fail_p_value(check: dict[str, Any]) -> float | None:
    """The one-sided p-value behind a failed claim: for parity, of `the difference lies within the
    margin on the side it failed` (the TOST interval's bound beyond the margin, in p form); for
    breakage, the exact McNemar p. None: not a chance claim (a repeatable crash)."""
    if check["name"].startswith("stability:"):
        return (check.get("breakage") or {}).get("p_value")
    diff, se, df, margin = check.get("diff"), check.get("se"), check.get("df"), check.get("margin")
    if diff is None or margin is None:
        return None
    if not se:
        return 0.0  # a point interval beyond the margin (no spread and no step to floor it at)
    beyond_high = 1.0 - float(stats.t_cdf((diff - margin) / se, df))   # H0: diff <= +margin
    beyond_low = float(stats.t_cdf((diff + margin) / se, df))          # H0: diff >= -margin
    test = stats.test_of(check.get("test_kind") or stats.EQUIVALENCE)
    return test.fail_p_value(beyond_high, beyond_low, check.get("direction", "minimize"))


def apply(checks: list[dict[str, Any]], counted_legs: int) -> None:
    """Correct the failed parity and breakage claims in `checks` (in place) across the
    `counted_legs` legs compared with the baseline; a claim not confirmed becomes inconclusive."""
    if counted_legs <= 1:
        return
    for family in FAMILIES:
        claims = []
        for c in checks:
            if _family(c) != family or c["status"] != "failed" or not c.get("counts_toward_verdict", True):
                continue
            p = fail_p_value(c)
            if p is not None:
                claims.append((p, c))
        claims.sort(key=lambda pc: (pc[0], pc[1]["name"]))
        confirmed = True
        for rank, (p, c) in enumerate(claims):
            level = float((c.get("breakage") or {}).get("alpha") or c.get("alpha") or 0.05)
            threshold = level / (counted_legs - rank)
            confirmed = confirmed and p <= threshold
            c["holm"] = {"p_value": p, "rank": rank + 1, "legs": counted_legs, "threshold": threshold,
                         "confirmed": confirmed}
            if confirmed:
                continue
            c["status"], c["passed"] = "inconclusive", False
            c["outcome"] = stats.INCONCLUSIVE if family == "parity" else c.get("outcome")
            c["why"] += (f"; but not shown once {counted_legs} legs are judged against one baseline: Holm's "
                         f"correction needs p <= {threshold:.3g} for this claim (rank {rank + 1} of "
                         f"{counted_legs}), it has p={p:.3g}")
            c["recommendation"] = {"seeds": None, "why": (
                f"fresh seeds on {c['name'].split(':', 1)[1]} (not re-using these) would show whether "
                f"{FAMILIES[family]}: this evidence holds for one leg at a time, not for {counted_legs}")}
