"""The report's "What this verdict cost" section: the jobs, instance-hours and money the verdict
took, the design that decided when to stop, and what the fixed design sized for 80% power at the
spread this run found would have spent, so a budget owner sees the price of the answer."""
from __future__ import annotations

import html
from typing import Any

from bakeoff_runtime.contract.documents import Evaluation
from bakeoff_runtime.report.formatting import md, seed_span, usd
from bakeoff_runtime.verdict import stats

FIXED_POWER = 0.8


def _spent(ev: Evaluation) -> dict[str, Any]:
    jobs = hours = cost = 0.0
    priced = True
    for f in (ev.get("legs") or {}).values():
        runs = f.get("runs") or []
        jobs += len(runs)
        count = f.get("instance_count") or 1
        hours += sum((r.get("billable_s") or 0.0) for r in runs) * count / 3600
        costs = [r.get("cost_usd") for r in runs]
        if any(c is None for c in costs):
            priced = False
        cost += sum(c or 0.0 for c in costs)
    return {"jobs": int(jobs), "instance_hours": hours, "cost_usd": cost if priced else None}


def _fixed(ev: Evaluation) -> dict[str, Any] | None:
    """Seeds per leg a fixed design would run for 80% power at the largest paired spread found,
    and its cost at this run's mean cost per job of each leg."""
    parity = ev.get("parity") or {}
    sds = [sd for c in ev.get("checks") or [] if c.get("test") == "paired" and (sd := c.get("sd"))]
    if not sds or not parity.get("margin"):
        return None
    sigma = max(sds)
    seeds = stats.seeds_for_power(sigma, float(parity["margin"]), float(parity["alpha"]), FIXED_POWER,
                                  test=parity.get("test", stats.EQUIVALENCE))
    if seeds is None:
        return {"seeds": None, "sigma": sigma}
    legs = list((ev.get("legs") or {}).values())
    per_job = [f.get("cost_per_run_usd_mean") for f in legs]
    cost = seeds * sum(c for c in per_job if c is not None) if all(c is not None for c in per_job) else None
    return {"seeds": seeds, "sigma": sigma, "jobs": seeds * len(legs), "cost_usd": cost}


def _lines(ev: Evaluation) -> list[str]:
    spent, fixed, design = _spent(ev), _fixed(ev), ev.get("sequential")
    emulated = " (emulated locally: not what the target hardware would bill)" if (ev.get("speed") or {}).get(
        "emulated") else ""
    out = [f"This verdict took {spent['jobs']} jobs, {spent['instance_hours']:.3g} instance-hours, "
           f"{usd(spent['cost_usd'])}{emulated}."]
    if design:
        out.append(f"Decided by a group-sequential paired test ({design['spending']} alpha spending, look "
                   f"{design['look']} at {design['looks'][-1]} of at most {design['max_seeds']} seeds per leg; "
                   f"interval level {design['ci_level']:.3g}), which stops as soon as the verdict is pass or fail; "
                   f"alpha spent up to this look: {design['alpha_spent'][-1]:.3g} of {design['alpha']:g}.")
    else:
        alpha = (ev.get("parity") or {}).get("alpha")
        out.append(f"Decided by a fixed design on one look, spending all of alpha {alpha:g}: every declared seed ran "
                   "(`bakeoff run --until-decided` stops as soon as the verdict is decided)." if alpha is not None
                   else "Decided by a fixed design: every declared seed ran.")
    looks = ev.get("looks")
    if looks and looks.get("earlier"):
        before = "; ".join(f"look {x.get('look')} ({(x.get('design') or {}).get('kind', 'fixed')}) on seeds "
                           f"{seed_span(x.get('seeds') or [])}: {x.get('verdict')}" for x in looks["earlier"])
        out.append(f"This is look {looks.get('this_look')} at this directory's data; before it: {before}.")
    if fixed and fixed.get("seeds"):
        out.append(f"A fixed design sized for {FIXED_POWER:.0%} power at this spread (paired SD "
                   f"{fixed['sigma']:.3g}) would run {fixed['seeds']} seeds per leg: {fixed['jobs']} jobs, "
                   f"{usd(fixed['cost_usd'])}.")
    elif fixed:
        out.append(f"At this spread (paired SD {fixed['sigma']:.3g}) no fixed design of up to "
                   f"{stats.MAX_RECOMMENDED_SEEDS} seeds per leg reaches {FIXED_POWER:.0%} power.")
    return out


def section_markdown(ev: Evaluation) -> list[str]:
    return ["", "## What this verdict cost", ""] + [f"- {md(line)}" for line in _lines(ev)]


def section_html(ev: Evaluation) -> str:
    return ("<h2>What this verdict cost</h2><ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in _lines(ev))
            + "</ul>")
