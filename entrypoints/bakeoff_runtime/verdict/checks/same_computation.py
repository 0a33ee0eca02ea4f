"""`same-computation:<leg>`: a note, only when a leg and the baseline gave bit-identical results
on every paired seed: the same computation ran on both legs.
"""
from __future__ import annotations

from typing import Any, TypedDict

from bakeoff_runtime.verdict.checks._summary import COMPLETED
from bakeoff_runtime.verdict.checks.registry import CheckKind, Inputs, kind_of


class Details(TypedDict, total=False):
    """A same-computation note's own keys."""
    seeds_paired: list[int]


def same_computation_check(leg: str, base: str, legs_cfg: dict, runs_by_leg: dict[str, list[dict]],
                           metric: str, both_shown: bool = False) -> dict[str, Any] | None:
    """A note when `leg` and the baseline gave bit-identical results (the parity metric and the
    first and last training losses) on every seed both completed: the same arithmetic ran on both,
    so the comparison says nothing about the difference between their hardware. Two legs a local
    run emulated on the same device do that by design, and are told so; None when they differ."""
    def results(name):
        return {r["seed"]: ((r["summary"].get("metrics") or {}).get(metric), r["summary"].get("first_train_loss"),
                            r["summary"].get("final_train_loss"))
                for r in runs_by_leg[name]
                if r.get("summary") and r.get("status", r["summary"].get("status")) == COMPLETED}

    mine, theirs = results(leg), results(base)
    paired = sorted(set(mine) & set(theirs), key=str)
    if not paired or any(mine[s] != theirs[s] or mine[s][0] is None for s in paired):
        return None
    where = {n: (legs_cfg.get(n) or {}).get("emulated_on") for n in (leg, base)}
    same_place = where[leg] and where[leg] == where[base]
    agree = (f"{leg} and {base} gave bit-identical results on every paired seed ({', '.join(map(str, paired))}: "
             f"{metric} and training losses)")
    if same_place:
        why = (f"{agree}: the same computation ran on both legs, as it does when a local run emulates both on "
               f"{where[leg]}: this comparison says nothing about their hardware")
    elif both_shown:  # each showed it ran on its own device: they differ below what the script reports
        why = (f"{agree}, though each showed it trained on its own backend: their differences are below the "
               "precision the script reports its numbers at (print more digits to see them)")
    else:
        why = (f"{agree}: the same computation ran on both legs; legs on different hardware cannot agree to the last "
               "bit, so one of them did not run where its backend runs (see its backend check)")
    return {"name": f"same-computation:{leg}", "status": "warning", "passed": False, "seeds_paired": paired, "why": why}


def run(inputs: Inputs) -> list[dict[str, Any]]:
    """A note per leg that agreed with the baseline to the last bit; whether both showed their backend is
    read from the backend checks made before this one."""
    base = inputs.base
    shown = {c["name"].split(":", 1)[1] for c in inputs.earlier if kind_of(c) == "backend" and c["status"] == "passed"}
    return [c for leg in inputs.legs if leg != base
            and (c := same_computation_check(leg, base, inputs.legs, inputs.runs_by_leg, inputs.metric,
                                             both_shown={leg, base} <= shown)) is not None]


KIND = CheckKind("same-computation", run, section="same_computation", details=Details)
