"""What a fixed design would have cost: the seeds per leg that reach 80% power at the largest
paired spread this run found, planned as the recommendation plans (on the spread's 80% upper
confidence limit, stats.spread_upper_limit: a spread from a few seeds is an estimate, not the
truth), and their price at this run's mean cost per job of each leg.

Decided with the verdict (the evaluation records it as `fixed_design`), so the report only words it
and renders without the statistics' numpy and scipy.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bakeoff_runtime.contract.documents import FixedDesign
from bakeoff_runtime.verdict import stats

FIXED_POWER = 0.8


def fixed_design(parity: Mapping[str, Any], checks: Sequence[Mapping[str, Any]],
                 legs: Mapping[str, Mapping[str, Any]]) -> FixedDesign | None:
    """None where there is nothing to size it on: no paired check with a spread, or no margin."""
    spreads = [(sd, int(c.get("n_pairs") or 0) - 1) for c in checks
               if c.get("test") == "paired" and (sd := c.get("sd")) and int(c.get("n_pairs") or 0) >= 2]
    if not spreads or not parity.get("margin"):
        return None
    sigma, df = max(spreads)
    seeds = stats.seeds_for_power(sigma, float(parity["margin"]), float(parity["alpha"]), FIXED_POWER,
                                  test=parity.get("test", stats.EQUIVALENCE), sigma_df=df)
    out: FixedDesign = {"power": FIXED_POWER, "sigma": sigma, "max_seeds": stats.MAX_RECOMMENDED_SEEDS,
                        "seeds": seeds, "jobs": None, "cost_usd": None, "sigma_df": df,
                        "planned_sigma": stats.spread_upper_limit(sigma, df)}
    if seeds is not None:
        per_job = [f.get("cost_per_run_usd_mean") for f in legs.values()]
        out["jobs"] = seeds * len(legs)
        out["cost_usd"] = seeds * sum(c for c in per_job if c is not None) if None not in per_job else None
    return out
