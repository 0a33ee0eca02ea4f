"""The report's "What this verdict cost" section: the jobs, instance-hours and money the verdict
took, the design that decided when to stop, and what the fixed design sized for 80% power at the
spread this run found would have spent, so a budget owner sees the price of the answer."""
from __future__ import annotations

import html
from typing import Any

from bakeoff_runtime.contract.documents import Evaluation, FixedDesign
from bakeoff_runtime.report.formatting import md, seed_span, usd


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


def _fixed(ev: Evaluation) -> FixedDesign | None:
    if "fixed_design" in ev:  # decided with the verdict (bakeoff.evaluation/3)
        return ev["fixed_design"]
    # An evaluation/2 document: sized here as its evaluation would have (this one imports scipy).
    from bakeoff_runtime.verdict.fixed_design import fixed_design

    return fixed_design(ev.get("parity") or {}, ev.get("checks") or [], ev.get("legs") or {})


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
        parity = next((c for c in ev.get("checks") or [] if c["name"].startswith("parity:") and c.get("design")),
                      None)
        if parity and parity.get("design") == "two_stage":
            level = parity.get("ci_level")
            out.append(f"Decided by stage {parity.get('stage', 1)} of a two-stage design"
                       + (f" (stage 1 reads the {level:.1%} interval, keeping the rest of alpha {alpha:g} for a "
                          "stage 2 of fresh seeds, should it be needed)" if parity.get("stage", 1) == 1 and level
                          and alpha is not None else " (both stages' seeds, by the inverse-normal combination)")
                       + ": every declared seed ran.")
        else:
            out.append(f"Decided by a fixed design on one look, spending all of alpha {alpha:g}: every declared seed "
                       "ran (`bakeoff run --until-decided` stops as soon as the verdict is decided)."
                       if alpha is not None else "Decided by a fixed design: every declared seed ran.")
    looks = ev.get("looks")
    if looks and looks.get("earlier"):
        before = "; ".join(f"look {x.get('look')} ({(x.get('design') or {}).get('kind', 'fixed')}) on seeds "
                           f"{seed_span(x.get('seeds') or [])}: {x.get('verdict')}" for x in looks["earlier"])
        out.append(f"This is look {looks.get('this_look')} at this directory's data; before it: {before}.")
    planned = (f", planned on its 80% upper confidence limit {fixed['planned_sigma']:.3g} as the recommendation "
               "plans" if fixed and fixed.get("planned_sigma") else "")
    if fixed and fixed.get("seeds"):
        out.append(f"A fixed design sized for {fixed['power']:.0%} power at this spread (paired SD "
                   f"{fixed['sigma']:.3g}{planned}) would run {fixed['seeds']} seeds per leg: {fixed['jobs']} jobs, "
                   f"{usd(fixed['cost_usd'])}.")
    elif fixed:
        out.append(f"At this spread (paired SD {fixed['sigma']:.3g}{planned}) no fixed design of up to "
                   f"{fixed['max_seeds']} seeds per leg reaches {fixed['power']:.0%} power.")
    return out


def section_markdown(ev: Evaluation) -> list[str]:
    return ["", "## What this verdict cost", ""] + [f"- {md(line)}" for line in _lines(ev)]


def section_html(ev: Evaluation) -> str:
    return ("<h2>What this verdict cost</h2><ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in _lines(ev))
            + "</ul>")
