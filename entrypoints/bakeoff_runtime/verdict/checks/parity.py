"""`parity:<leg>~<baseline>`: the parity test of each leg against the baseline on the parity metric
(verdict/stats.py decides the interval; parity_tests.py words it), in the design it belongs to.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, TypedDict

from bakeoff_runtime.verdict.checks.registry import CheckKind, Inputs

if TYPE_CHECKING:  # numpy and scipy: imported where a check runs, so that the report (which reads the
    # registry) renders without them
    from bakeoff_runtime.verdict.two_stage import Stage


class Details(TypedDict, total=False):
    """A parity check's own keys, the main ones (stats.compare's figures; contract.documents.Check has all)."""
    test: str | None                   # paired | welch | None (nothing to compare)
    test_label: str
    outcome: str                       # pass | fail | inconclusive
    margin: float
    diff: float
    ci: list[float]
    ci_level: float
    p_value: float | None
    design: str
    stage: int
    holm_level: float | None
    better_by: float
    unseen_rate: float | None
    outlier: dict[str, Any]
    recommendation: dict[str, Any]


def _g(v: float | None) -> str:
    return "-" if v is None else f"{v:+.4g}"


def _parity_check(leg: str, base: str, values: dict[str, dict[int, float]], parity: dict,
                  power: float, look_alpha: float | None = None, legs_compared: int = 1,
                  stage: Stage | None = None) -> dict[str, Any]:
    """`look_alpha`: the one-sided level this look reads (a sequential design's, or a two-stage design's
    stage 1); `stage`: the two-stage design's place (stage 2 carries stage 1's figures for this leg)."""
    from bakeoff_runtime.verdict import stats, two_stage

    metric, direction = parity["metric"], parity.get("direction", "minimize")
    test, alpha = parity.get("test", stats.EQUIVALENCE), float(parity["alpha"])
    stage = stage or two_stage.Stage(design=two_stage.FIXED if look_alpha is None else "sequential")
    name = f"parity:{leg}~{base}"
    margin = float(parity["margin"])
    if parity.get("margin_type") == "relative":
        base_vals = list(values[base].values())
        if not base_vals:
            return {"name": name, "status": "inconclusive", "passed": False, "test": None,
                    "why": f"a relative margin needs completed baseline runs; {base} has none",
                    "recommendation": {"seeds": None, "why": f"make {base} complete its runs"}}
        margin *= abs(sum(base_vals) / len(base_vals))
    missing = [n for n in (leg, base) if not values[n]]
    if missing:  # no run of one of them completed: the stability check says why; no seed count cures it
        return {"name": name, "status": "inconclusive", "passed": False, "test": None,
                "why": f"{metric}: nothing to compare: no run of {' or '.join(missing)} completed",
                "recommendation": {"seeds": None, "why": f"make {' and '.join(missing)} complete a run first "
                                   f"(stability:{missing[0]} says what stopped it)"}}
    # A sequential design's look reads a wider interval (its alpha-spending level).
    r = stats.compare(values[base], values[leg], margin=margin, alpha=look_alpha or alpha, test=test,
                      direction=direction, resolution=parity.get("resolution"))
    first = stage.first.get(leg) if stage.number == 2 else None
    if first is not None and r["test"] is not None:
        r = two_stage.stage2(r, first, alpha, margin, test, direction)
    elif r["test"] is not None and stage.design == two_stage.TWO_STAGE:
        r["fail_p"] = two_stage.stage1_fail_p(r, alpha, margin, test, direction)
    r["design"], r["stage"] = stage.design, stage.number
    # Holm's correction across claims reads each claim's p against the design's own level: the
    # two-stage design's stage-wise p against alpha; a sequential look's p against its nominal level.
    r["holm_level"] = look_alpha if stage.design == "sequential" else alpha
    out: dict[str, Any] = {"name": name, "passed": r["outcome"] == stats.PASS,
                           "status": {"pass": "passed", "fail": "failed"}.get(r["outcome"], "inconclusive"),
                           **{k: v for k, v in r.items() if k != "outcome"}, "outcome": r["outcome"]}
    if r["test"] is None and r.get("no_step"):
        out["why"] = f"{metric}: not decided: {r['why_short']}"
        out["recommendation"] = {"seeds": None, "why": "set parity.resolution to the metric's step, so that a "
                                                       "spread of zero is not read as certainty"}
        return out
    if r["test"] is None:
        out["why"] = f"{metric}: nothing to compare: {r['why_short']}"
        out["recommendation"] = {"seeds": 3, "why": "run at least 3 seeds per leg, so that the spread between "
                                                    "them can be measured"}
        return out
    level = round(r["ci_level"] * 100, 1)
    level = int(level) if level == int(level) else level
    test_name = (f"paired t on {r['n_pairs']} seeds" if r["test"] == "paired"
                 else f"Welch t on {r['n_leg']} vs {r['n_baseline']} unpaired seeds")
    if first is not None:
        test_name = (f"two-stage: stage 1 ({first['test']}, {len(first.get('seeds') or []) or first.get('n_pairs')} "
                     f"seeds) and stage 2 ({test_name}), inverse-normal combination")
    elif stage.design == two_stage.TWO_STAGE:
        test_name += ", stage 1 of 2"
    kind = stats.test_of(test)
    out["test_label"] = f"{kind.label}, {test_name}"
    lo, hi = r["ci"]
    ci = f"{level}% CI [{_g(lo)}, {_g(hi)}]"
    if r.get("skew_widened") and r.get("ci_t"):  # verdict/skew.py: Hall's bound read beside the t bound
        ci += (f" (the differences are visibly skewed, skewness {r['skewness']:.2f}: on each side the wider of the t "
               f"interval [{_g(r['ci_t'][0])}, {_g(r['ci_t'][1])}] and Hall's skewness-corrected one)")
    diff = f"{metric} difference {_g(r['diff'])} ({leg} - {base}; {test_name})"
    p = "" if r["p_value"] is None else f"; p={r['p_value']:.3g}"
    worse_sign = "+" if direction == "minimize" else "-"
    floor = (f" (the SD of the differences, {r['sd_observed']:.3g}, is floored at {r['sd']:.3g}, what rounding to "
             f"the metric's step {r['step']:.3g} alone gives; the step is {r['step_basis']})"
             if r.get("sd_floored") else "")
    if r["identical"] and r["outcome"] == stats.PASS:
        out["why"] = (f"{leg} and {base} gave identical {metric} on every one of the {r['n_pairs']} paired seeds "
                      f"(difference 0 each time): equivalent within +/-{margin:.4g}, {ci}{floor}")
    elif r["outcome"] == stats.PASS:
        inside = kind.inside(f"{margin:.4g}", worse_sign)
        out["why"] = f"{kind.passed_word}: {diff}, {ci} {inside}{p}{floor}"
    elif r["outcome"] == stats.FAIL:
        side = "worse" if r["worse"] else "better"
        bound = f"+{margin:.4g}" if lo > margin else f"-{margin:.4g}"
        out["why"] = (f"a difference beyond the margin: {diff}, {ci} lies wholly beyond {bound}{floor}: "
                      f"{leg} is {side} than {base}")
        if side == "better":
            out["why"] += " (under `test: non_inferiority` a better leg passes)"
    else:
        region = kind.undecided_region(f"{margin:.4g}", worse_sign)
        out["why"] = f"not decided: {diff}, {ci} crosses {region}{p}{floor}"
    if r["better"]:
        out["better_by"] = abs(r["diff"])
        out["why"] += f"; {leg} is better than {base} by {abs(r['diff']):.4g}"
    if r["test"] == "paired":
        out["unseen_rate"] = stats.unseen_rate(r["n_pairs"], alpha)  # a rarer regression can strike no seed run
        far = stats.outlier([d for _, d in r["per_seed_diffs"]], step=r.get("step"))
        if far is not None:
            # Said, not acted on: a downgrade of passes alone was one-sided (a fail with the same seed stood),
            # made power fall as seeds were added under symmetric heavy tails (0.907 at 5 seeds, 0.778 at 20)
            # and barely moved the false passes of skewed differences (0.232 -> 0.225 at 3 seeds). What the
            # interval assumes is stated beside it (report: Statistics; README: How parity is decided).
            seed = r["per_seed_diffs"][far["index"]][0]
            out["outlier"] = {**far, "seed": seed}
            out["why"] += (f"; note: seed {seed}'s difference ({_g(far['difference'])}) lies far from the other "
                           f"seeds' (studentized {far['t']:.3g}, p={far['p_value']:.3g} over {far['pairs']} seeds): "
                           "the interval assumes near-normal differences, so find why it differs (its curves in "
                           "the report)")
    if r["outcome"] == stats.INCONCLUSIVE:
        out["recommendation"] = _recommend(r, margin, alpha, power, test, len(values[leg]), len(values[base]),
                                           legs_compared, stage, direction,
                                           sorted({*values[leg], *values[base]}))
        out["why"] += "; " + out["recommendation"]["why"]
    return out


def _recommend(r: dict, margin: float, alpha: float, power: float, test: str, n_leg: int, n_base: int,
               legs: int = 1, stage: Stage | None = None, direction: str = "minimize",
               seeds_run: list[int] | None = None) -> dict:
    """What decides this comparison next, in the design it belongs to. At stage 1 of the two-stage
    design: the fresh seeds stage 2 needs, sized for the conditional power given stage 1 (planned on the
    80% upper confidence limit of the observed spread, stats.spread_upper_limit; never on the observed
    difference, which would chase the noise that left it undecided). Where the design has ended (stage
    2 run, a fixed design, a sequential design at its cap): a new attempt is a fresh start, sized as a new
    study. With several legs each leg is planned at power 1 - (1 - power) / legs, so that all pass
    together with at least `power`, and a fail is called at Holm's strictest level alpha / (2 legs)."""
    from bakeoff_runtime.verdict import stats, two_stage

    stage = stage or two_stage.Stage(design=two_stage.FIXED)
    paired = r["test"] == "paired"
    sigma = r.get("sd") if paired else r["se"] / math.sqrt(1 / max(n_leg, 1) + 1 / max(n_base, 1))
    if r.get("stage2_alone"):  # at stage 2 the spread is this stage's own
        alone = r["stage2_alone"]
        sigma = alone.get("sd") or sigma
    sigma = float(sigma or 0.0)
    have = r["n_pairs"] if paired else min(n_leg, n_base)
    sigma_df = max(1, (have - 1) if paired else n_leg + n_base - 2)
    what = "SD of the per-seed differences" if paired else "SD of one leg's values"
    leg_power = 1 - (1 - power) / legs
    planned = stats.spread_upper_limit(sigma, sigma_df) if sigma > 0 else 0.0
    basis = (f"the {stats.PLANNING_CONFIDENCE:.0%} upper confidence limit ({planned:.3g}) of the observed {what} "
             f"({sigma:.3g}, from {sigma_df + 1 if paired else n_leg + n_base} values)")
    jointly = f" for all {legs} legs together" if legs > 1 else ""
    rec = {"power": power, "sigma": sigma, "sigma_df": sigma_df, "planned_sigma": planned,
           "planning_confidence": stats.PLANNING_CONFIDENCE, "legs": legs, "design": stage.design,
           "stage": stage.number}
    top = max(seeds_run or [have - 1])
    if stage.design == two_stage.TWO_STAGE and stage.number == 1 and sigma > 0:
        c = two_stage.critical(alpha)
        figures = {"diff": float(r["diff"]), "se": float(r["se"]), "df": float(r["df"])}
        need_low = math.sqrt(2) * c - two_stage._side_z(figures, -margin, "low")
        need_high = math.sqrt(2) * c - two_stage._side_z(figures, margin, "high")
        n = stats.stage2_seeds(sigma, margin, need_low, need_high, leg_power, test, direction, sigma_df=sigma_df)
        fresh = f"seeds: [{top + 1}..{top + n}]" if n else ""
        if n is None:
            return {**rec, "seeds": None, "next": "stage 2", "why": (
                f"stage 2 of this question cannot reach {power:.0%} power with {stats.MAX_RECOMMENDED_SEEDS} seeds "
                f"or fewer at {basis}: revisit the margin or reduce run-to-run noise")}
        return {**rec, "seeds": n, "next": "stage 2", "fresh_seeds": list(range(top + 1, top + 1 + n)), "why": (
            f"continue with stage 2: {n} fresh seeds per leg of this same question ({fresh}, none of these), in "
            f"this --out or another: decided together with these seeds by the two-stage design, which keeps "
            f"alpha and this stage's data; planned on {basis}, they give {power:.0%} probability{jointly} that "
            "legs that truly agree pass")}
    n = stats.seeds_for_power(sigma, margin, two_stage.stage1_level(alpha), leg_power, paired=paired, test=test,
                              sigma_df=sigma_df, fail_alpha=alpha / (2 * legs)) if sigma > 0 else None
    if stage.design == "sequential":
        return {**rec, "seeds": n, "next": "next round", "why": (
            f"the sequential design decides it in its next round (`--until-decided` adds the seeds; {n or 'no'} "
            f"seeds per leg of a fixed design would give {power:.0%} power{jointly} at {basis}); at its cap a new "
            "attempt is a fresh start (`--fresh-start REASON`)")}
    ended = {"two_stage": "both stages of this question's design have run",
             "fixed": "this question's fixed design has run (it has no second stage)",
             "sequential": "this question's sequential design"}.get(stage.design, "its design")
    if n is None:
        return {**rec, "seeds": None, "next": "fresh start", "why": (
            f"{ended} and left it undecided; no affordable number of seeds ({stats.MAX_RECOMMENDED_SEEDS} per leg or "
            f"fewer) decides it at {basis}: revisit the margin or reduce run-to-run noise")}
    return {**rec, "seeds": n, "next": "fresh start", "why": (
        f"{ended} and left it undecided: deciding it again is a new attempt, counted as one: `bakeoff run SPEC "
        f"--fresh-start REASON` with {n} seeds per leg (planned on {basis} for {power:.0%} power{jointly}), "
        "recorded in the report as a fresh start of the same question")}


def run(inputs: Inputs) -> list[dict[str, Any]]:
    return [_parity_check(leg, inputs.base, inputs.values, inputs.parity, inputs.power, inputs.look_alpha,
                          inputs.compared, inputs.stage)
            for leg in inputs.legs if leg != inputs.base]


KIND = CheckKind("parity", run, details=Details)
