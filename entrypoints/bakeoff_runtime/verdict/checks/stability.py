"""`stability:<leg>`: a leg's own training. Breakage counts against a leg only where it breaks and
the baseline does not (exact McNemar on the discordant seeds); lost jobs leave it undecided, never failed.
"""
from __future__ import annotations

import math
from typing import Any, TypedDict

from bakeoff_runtime.contract.failure_kinds import NOT_THE_LEGS, WHO_MUST_ACT
from bakeoff_runtime.verdict.checks.registry import CheckKind, Inputs
from bakeoff_runtime.verdict.runs import COMPLETED, DIVERGED, FAILED, LOST


class Details(TypedDict, total=False):
    """A stability check's own keys."""
    breakage: dict[str, Any]           # McNemar's counts and p (and stage 1's, at stage 2), or `repeatable`
    lost_seeds: list[int]
    script_bug: str
    could_not_run: bool                # its runs failed for reasons that are not the leg's
    recommendation: dict[str, Any]


def _broke(leg: str, r: dict, runs_by_leg: dict[str, list[dict]]) -> str | None:
    """Why run `r` of `leg` broke (it diverged, or crashed where another leg ran that seed), or None.
    A seed the doomed-leg rule never ran is not evidence of anything."""
    if r["kind"] == "doomed" or r["kind"] in NOT_THE_LEGS:  # not evidence of how the leg trains
        return None
    if r["status"] == DIVERGED:
        return f"seed {r['seed']} diverged: {r['reason']}"
    if r["status"] == FAILED:
        ran = sorted(name for name, rs in runs_by_leg.items() if name != leg
                     for o in rs if o["seed"] == r["seed"] and o["status"] in (COMPLETED, DIVERGED))
        if ran:
            return f"seed {r['seed']} crashed here and not on {', '.join(ran)}: {r['reason']}"
    return None


def mcnemar_p(leg_only: int, base_only: int) -> float:
    """Exact one-sided McNemar p: P(at least `leg_only` of the discordant seeds broke on the leg)
    if breaking were as likely on either leg (a binomial with p = 1/2 on the discordant seeds)."""
    n = leg_only + base_only
    return sum(math.comb(n, k) for k in range(leg_only, n + 1)) / 2 ** n if n else 1.0


def _needed_discordant(alpha: float) -> int:
    """The fewest seeds broken on the leg alone (none the other way) that exact McNemar can call."""
    return math.ceil(math.log2(1 / alpha))


def _stability_check(leg: str, base: str, runs_by_leg: dict[str, list[dict]], alpha: float,
                     claims: int = 1) -> dict[str, Any]:
    """A leg's own training. Breakage counts against a leg only where it breaks and the baseline
    does not, shown by exact McNemar on the discordant seeds at `alpha`; a seed that broke on both
    is not a difference between them, and a broken baseline leaves the comparison undecided.
    `claims`: the family Holm's correction counts (multiplicity.py), so the seeds it advises are
    enough at the strictest level a fail can be confirmed at, alpha / claims."""
    from bakeoff_runtime.verdict import stats  # numpy: here, so that the report reads the registry without it

    runs = runs_by_leg[leg]
    n = len(runs)
    broke = {r["seed"]: why for r in runs if (why := _broke(leg, r, runs_by_leg))}
    lost = [f"seed {r['seed']} lost to the infrastructure ({r['kind']}): {r['reason']}"
            for r in runs if r["status"] == LOST]
    blocked = [f"seed {r['seed']} could not run ({WHO_MUST_ACT.get(r['kind'], r['kind'])}): {r['reason']}"
               for r in runs if r["status"] == FAILED and r["kind"] in NOT_THE_LEGS]
    everywhere = [f"seed {r['seed']} crashed on every leg (a bug in the script, not a difference between legs): "
                  f"{r['reason']}" for r in runs if r["status"] == FAILED and r["seed"] not in broke
                  and r["kind"] != "doomed" and r["kind"] not in NOT_THE_LEGS]
    stopped = [r for r in runs if r["kind"] == "doomed"]
    name = f"stability:{leg}"
    others = [o for o in runs_by_leg if o != leg]
    # A seed that broke on every leg says nothing about any one of them.
    shared = sorted(s for s in broke if others and all(
        any(o["seed"] == s and _broke(other, o, runs_by_leg) for o in runs_by_leg[other]) for other in others))
    notes = [f"seed {s} broke on every leg (not a difference between legs; left out of the comparison)"
             for s in shared]
    if leg == base:
        own = {s: w for s, w in broke.items() if s not in shared}
        if own:
            return {"name": name, "status": "inconclusive", "passed": False, "breakage": {"seeds": sorted(own)},
                    "why": f"the baseline {base} broke ({'; '.join(own.values())}): those seeds say nothing about "
                           "how the other legs compare with it",
                    "recommendation": {"seeds": None, "why": f"fix what breaks {base}, then start this question "
                                       "afresh (`bakeoff run ... --fresh-start REASON`): a baseline that breaks "
                                       "cannot show a leg's breakage to be the leg's own"}}
    else:
        base_broke = {r["seed"] for r in runs_by_leg[base] if _broke(base, r, runs_by_leg)}
        base_ran = {r["seed"] for r in runs_by_leg[base] if r["status"] in (COMPLETED, DIVERGED)
                    or r["seed"] in base_broke}
        paired = {s for s in broke if s in base_ran}
        leg_only = sorted(s for s in paired if s not in base_broke)
        both = sorted(s for s in paired if s in base_broke and s not in shared)
        ran_here = {r["seed"] for r in runs if r["status"] in (COMPLETED, DIVERGED) or r["seed"] in broke}
        base_only = sorted(s for s in base_broke if s in ran_here and s not in broke)
        unpaired = sorted(s for s in broke if s not in base_ran)
        notes += [f"seed {s} broke on {base} too (not a difference between them)" for s in both]
        repeatable = _repeatable_crash(runs, broke, base_broke)
        if repeatable:
            return {"name": name, "status": "failed", "passed": False, "breakage": {"repeatable": True},
                    "why": f"{leg}'s training broke the same way on every seed it ran, and {base}'s on none: "
                           f"{repeatable} (a repeatable failure of this leg, not chance)"}
        if leg_only or unpaired:
            p = mcnemar_p(len(leg_only), len(base_only))
            counts = {"leg_only": len(leg_only), "baseline_only": len(base_only), "both": len(both),
                      "unpaired": len(unpaired), "p_value": p, "alpha": alpha}
            told = "; ".join(broke[s] for s in leg_only + unpaired)
            tally = (f"{len(leg_only)} seed(s) broke on {leg} and not on {base}, {len(base_only)} the other way "
                     f"(exact McNemar p={p:.3g})")
            if p <= alpha:
                return {"name": name, "status": "failed", "passed": False, "breakage": counts,
                        "why": f"{leg}'s training broke where {base}'s did not: {tally} <= alpha {alpha:g}: {told}"}
            need = _needed_discordant(alpha / claims)
            more = (f"about {min(stats.MAX_RECOMMENDED_SEEDS, math.ceil(need * n / len(leg_only)))} seeds per leg "
                    f"would show it if {leg} keeps breaking at this rate" if leg_only else
                    f"seeds that run on {base} too are needed to tell")
            return {"name": name, "status": "inconclusive", "passed": False, "breakage": counts,
                    "why": (f"{leg}'s training broke ({told}), but {tally} > alpha {alpha:g}: too few seeds to "
                            f"show that it breaks more often than {base}"
                            + (f"; {len(unpaired)} of them have no {base} run to pair with" if unpaired else "")
                            + (f"; {len(stopped)} seed(s) not run: {stopped[0]['reason']}" if stopped else "")),
                    "recommendation": {"seeds": None, "why": (
                        f"at least {need} seeds broken on {leg} alone (none the other way) show breakage at alpha "
                        f"{alpha / claims:.3g} (alpha {alpha:.3g} over the {claims} claims a fail could rest on); "
                        f"{more}; or fix what breaks it")}}
    if blocked:
        return {"name": name, "status": "inconclusive", "passed": False, "could_not_run": True,
                "why": f"{len(blocked)} of {n} runs could not run: " + "; ".join(blocked),
                "recommendation": {"seeds": None, "why": "more seeds will not help: fix what stopped them and run "
                                   f"again ({blocked[0]})"}}
    if stopped:
        return {"name": name, "status": "inconclusive", "passed": False,
                "why": f"{len(stopped)} of {n} seeds not run: {stopped[0]['reason']}",
                "recommendation": {"seeds": None, "why": f"{leg} was stopped early ({stopped[0]['reason']}): "
                                   "fix what makes it fall behind, or run it again to see it through"}}
    bug = _script_bug(leg, runs_by_leg) if everywhere else None
    if bug and not lost:
        return {"name": name, "status": "inconclusive", "passed": False, "script_bug": bug,
                "why": f"{len(everywhere)} of {n} runs gave no result, the same way on every leg: {bug}",
                "recommendation": {"seeds": None, "why": f"fix the script and run again: {bug}"}}
    if lost or everywhere:
        return {"name": name, "status": "inconclusive", "passed": False, "lost_seeds":
                sorted(r["seed"] for r in runs if r["status"] in (LOST, FAILED) and r["seed"] not in broke),
                "why": f"{len(lost) + len(everywhere)} of {n} runs gave no result: "
                       + "; ".join(lost + everywhere + notes)}
    done = n - len(broke)
    why = f"all {n} runs completed" if not broke else f"{done} of {n} runs completed; " + "; ".join(notes)
    return {"name": name, "status": "passed", "passed": True, "why": why}


def _breakage_stage2(check: dict[str, Any], p1: float | None, alpha: float) -> None:
    """A stage-2 stability check decided on both stages: its McNemar p (1 when nothing broke here) combined
    with stage 1's; a repeatable crash is no chance event and stands on its own."""
    from bakeoff_runtime.verdict import two_stage  # scipy: here, so that the report reads the registry without it

    counts = check.get("breakage")
    if check["name"].startswith("stability:") and counts and counts.get("repeatable"):
        return
    if p1 is None and not counts:
        return
    p2 = float((counts or {}).get("p_value", 1.0))
    failed, p_combined, p_stagewise = two_stage.combine_breakage(p1, p2, alpha)
    check["breakage"] = {**(counts or {}), "stage1_p_value": p1, "combined_p_value": p_combined,
                         "fail_p": p_stagewise, "alpha": alpha}
    told = (f"stage 1's exact McNemar p={1.0 if p1 is None else p1:.3g} and this stage's p={p2:.3g} combine "
            f"to p={p_combined:.3g}")
    if failed:
        check.update(status="failed", passed=False, why=f"{check['name'].split(':', 1)[1]}'s training broke more "
                     f"often than the baseline's over both stages: {told}")
        check.pop("recommendation", None)
    elif check["status"] == "failed":
        check.update(status="inconclusive", passed=False, why=f"{check['why']}; but over both stages {told}, "
                     "short of the design's level")


def _repeatable_crash(runs: list[dict], broke: dict[int, str], base_broke: set[int]) -> str | None:
    """The one error a leg crashed with on every seed it ran (at least two, or one stopped by its
    collective check), when the baseline broke on none: a deterministic failure of the leg, which
    a test for random breakage would wrongly call undecided."""
    ran = [r for r in runs if r["status"] != LOST and r["kind"] != "doomed"]
    crashed = [r for r in ran if r["status"] == FAILED and r["seed"] in broke]
    if not crashed or len(crashed) != len(ran) or base_broke:
        return None
    reasons = {(r["reason"] or "").strip() for r in crashed}
    if len(reasons) != 1 or (len(crashed) < 2 and crashed[0]["kind"] != "collective"):
        return None
    return reasons.pop() or "no reason recorded"


def _script_bug(leg: str, runs_by_leg: dict[str, list[dict]]) -> str | None:
    """The one error every leg's failed runs ended with (a deterministic bug in the script, which
    more seeds will not cure), or None when the legs failed in different ways."""
    failed = [r for runs in runs_by_leg.values() for r in runs if r["status"] == FAILED]
    if not failed or any(r["status"] in (COMPLETED, DIVERGED) for runs in runs_by_leg.values() for r in runs
                         if r["seed"] in {f["seed"] for f in failed}):
        return None
    reasons = {(r["reason"] or "").strip() for r in failed}
    if len(reasons) != 1:
        return None
    reason = reasons.pop() or "no reason recorded"
    if failed[0]["kind"] == "no-metric":
        return f"{reason}; more seeds will not help"
    if failed[0]["kind"] == "no-report":
        return (f"{reason}; more seeds will not help: use the Runtime (see the README's \"Bring your own "
                "script\"), so that the job reports what it measured")
    return f"a bug in the script, not a difference between legs; more seeds will not help: {reason}"


def run(inputs: Inputs) -> list[dict[str, Any]]:
    """Every leg's stability check; at stage 2 of the two-stage design, breakage decided over both stages."""
    alpha = inputs.look_alpha if inputs.look_alpha is not None else float(inputs.parity["alpha"])
    out = [_stability_check(leg, inputs.base, inputs.runs_by_leg, alpha, inputs.claims)
           for leg in inputs.legs]
    stage = inputs.stage
    if stage is not None and stage.number == 2:  # breakage over both stages: stage 1's McNemar p with this one's
        for c in out:
            _breakage_stage2(c, stage.breakage.get(c["name"].split(":", 1)[1]), float(inputs.parity["alpha"]))
    return out


KIND = CheckKind("stability", run, details=Details)
