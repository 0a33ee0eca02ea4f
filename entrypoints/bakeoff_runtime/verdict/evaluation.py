"""The evaluation step: read every job's outputs, decide parity, figure speed and cost.

Runs the same way locally and as a SageMaker ProcessingStep. Reads files only
(summary.json, metrics.jsonl, optional job.json), never MLflow, so a tracking
server being down cannot change a verdict.

Three outcomes, each meaning one thing:
* pass: every leg is shown equivalent to the baseline (or not worse, for
  `test: non_inferiority`), every seed of the design ran;
* fail: a difference beyond the margin is shown, or a leg is shown to break where the
  baseline does not (exact McNemar on the discordant seeds at alpha, or the same crash
  on every seed it ran); a broken baseline leaves the verdict inconclusive;
* inconclusive: anything else, with the seeds that would decide it.

This module assembles evaluation.json. Its parts: runs.py classifies the job records (one run per leg and
seed), figures.py makes each leg's figures and costs (and `recost`), and checks/ holds the checks, one
module per kind in the order of `checks.CHECKS`. Their public names are re-exported here.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, cast

from bakeoff_runtime.contract import EVALUATION_SCHEMA  # one id for the writer here and the reader (documents.py)
from bakeoff_runtime.contract.documents import (
    JSON,
    Check,
    Evaluation,
    EvaluationConfig,
    JobRecord,
    LegConfig,
    ParityRecord,
    Recommendation,
    RuleRecord,
    Speed,
)
from bakeoff_runtime.contract.failure_kinds import WHO_MUST_ACT
from bakeoff_runtime.verdict import checks as registry
from bakeoff_runtime.verdict import group_sequential, multiplicity, porting, stats
from bakeoff_runtime.verdict import sweeps as scaling
from bakeoff_runtime.verdict.checks.parity import _parity_check, _recommend  # noqa: F401  (re-exported)
from bakeoff_runtime.verdict.checks.stability import (  # noqa: F401  (re-exported)
    _breakage_stage2,
    _stability_check,
    mcnemar_p,
)
from bakeoff_runtime.verdict.figures import (  # noqa: F401  (re-exported: the figures' public names)
    CROSSCHECK_LIMIT,
    CROSSCHECK_MIN_WINDOW_S,
    THROUGHPUT_SPREAD_LIMIT,
    _leg_figures,
    job_costs,
    recost,
    resolve_target,
)
from bakeoff_runtime.verdict.fixed_design import fixed_design
from bakeoff_runtime.verdict.job_outputs import load_jobs  # noqa: F401  (re-exported: the evaluation's input)
from bakeoff_runtime.verdict.runs import (  # noqa: F401  (re-exported: the run states and the classifier)
    ABSURD,
    COMPLETED,
    DIVERGED,
    FAILED,
    LOST,
    LOST_KINDS,
    _as_seed,
    classify,
    collect_runs,
)
from bakeoff_runtime.verdict.two_stage import Stage

EMULATED_LABEL = "emulated: not indicative of the target hardware"
RULE_KEYS = ("metric", "direction", "margin", "margin_type", "alpha", "test", "baseline", "resolution")


def _voided_by(leg: str, base: str, failed: list[dict[str, Any]]) -> list[str]:
    """The failed checks that void `leg`'s parity outcome (it did not train where it says, nor the model
    the baseline trained, nor several runs; its training broke): its parity word is not the verdict's."""
    out = []
    for c in failed:
        kind, _, who = c["name"].partition(":")
        if kind == "parity":
            continue
        if who == leg or (kind == "same-model" and leg != base):
            out.append(c["name"])
    return out


# --- the rule --------------------------------------------------------------------------------
def rule_of(parity: dict) -> dict[str, Any]:
    return {k: parity.get(k) for k in RULE_KEYS}


def _rule_record(config: EvaluationConfig, parity: dict) -> RuleRecord:
    """The rule this verdict was decided under, and the rule fixed before the data if it differs."""
    out: RuleRecord = {"current": rule_of(parity), "original": None, "changed": False, "reason": None}
    original = config.get("rule_original")
    if config.get("rule_unrecorded"):  # finished jobs whose rule was lost: nothing shows it was fixed first
        out["changed"] = True
        out["reason"] = (f"{config.get('rule_change_reason') or 'not given'} (the rule fixed before the data was "
                         f"not recorded: {config['rule_unrecorded']})")
    elif original and rule_of(original) != rule_of(parity):
        out["original"], out["changed"] = rule_of(original), True
        out["reason"] = config.get("rule_change_reason") or "not given"
    return out


# --- the verdict -------------------------------------------------------------------------------
def evaluate(config: EvaluationConfig, jobs: list[JobRecord]) -> Evaluation:
    parity: dict[str, Any] = {"test": stats.EQUIVALENCE, "direction": "minimize", "margin_type": "absolute",
                              **config["parity"]}
    metric = parity["metric"]
    power = float(parity.get("power") or 0.8)
    legs_cfg = config["legs"]
    emulated = bool(config.get("emulated", any(c.get("emulated_on") for c in legs_cfg.values())))
    runs_by_leg = collect_runs(legs_cfg, jobs, metric)

    base = parity["baseline"]
    values = {name: {r["seed"]: float(r["summary"]["metrics"][metric]) for r in runs if r["status"] == COMPLETED}
              for name, runs in runs_by_leg.items()}
    target, target_basis = resolve_target(parity, values)
    figures = {name: _leg_figures(name, legs_cfg[name], runs, parity, target, emulated)
               for name, runs in runs_by_leg.items()}
    alpha = float(parity["alpha"])
    design = group_sequential.from_config(config.get("sequential"), alpha)
    stage = Stage.of(cast("dict[str, Any]", config), sequential=design is not None)
    look_alpha = design["nominal_alpha"][-1] if design else stage.level(alpha)
    compared = [n for n in legs_cfg if n != base and n not in scaling.ablation_legs(config)]
    claims = multiplicity.claims_of(len(compared))
    inputs = registry.Inputs(base=base, legs=legs_cfg, runs_by_leg=runs_by_leg, metric=metric, parity=parity,
                             power=power, values=values, look_alpha=look_alpha, claims=claims,
                             compared=max(1, len(compared)), stage=stage)
    checks = registry.run(inputs)  # every kind's checks, in the registry's order (verdict/checks/)
    measured = [c for c in checks if registry.is_measured(c)]  # did it measure the target at all?
    for c in measured:
        if c["name"].startswith("blockers:"):
            figures[c["name"].split(":", 1)[1]]["speed_representative"] = c.get("speed_representative", True)
    scaling.mark_checks(config, checks)  # an ablation leg's checks are reported, not counted
    multiplicity.apply(checks, len(compared), alpha)  # every claim a fail rests on, family-wise at alpha (Holm)
    failed = [c for c in checks if c["status"] == "failed" and scaling.counts(c) and registry.counts(c)]
    undecided = [c for c in checks if c["status"] == "inconclusive" and scaling.counts(c)
                 and registry.counts(c)]
    verdict = "fail" if failed else ("inconclusive" if undecided else "pass")
    for name, f in figures.items():
        if name != base:
            f["parity"] = next(c for c in checks if c["name"] == f"parity:{name}~{base}")["status"]
        f["voided_by"] = _voided_by(name, base, failed)
    stuck = _could_not_run(runs_by_leg, checks, config)
    recommendation = _overall_recommendation(undecided, legs_cfg) if verdict == "inconclusive" else None
    if stuck and verdict == "inconclusive":  # the stability checks' advice fits what stopped the legs
        specific = [c["recommendation"]["why"] for c in undecided
                    if c["name"].startswith("stability:") and c.get("recommendation")]
        recommendation = {"seeds": None, "why": "; ".join(dict.fromkeys(specific)) or (
            "more seeds will not help: fix what stopped them and run again (" + "; ".join(stuck) + ")")}
    headline = _headline(verdict, failed, undecided, stuck, parity, base, metric)
    if recommendation and not stuck:  # what stopped a leg says what to do already
        headline += f". To decide it: {recommendation['why']}"
    speed: Speed = {"emulated": emulated, "label": EMULATED_LABEL if emulated else "measured on the target hardware",
             "unstable_legs": [n for n, f in figures.items() if f["throughput"]["unstable"]],
             "crosscheck_disagrees": [n for n, f in figures.items() if f["throughput"]["crosscheck_disagrees"]]}
    if isinstance(config.get("jobs_at_once"), int) and config["jobs_at_once"] > 1:
        speed["jobs_at_once"] = config["jobs_at_once"]  # a local run's jobs shared the machine's cores
    evaluation: Evaluation = {
        "schema": EVALUATION_SCHEMA,
        "verdict": verdict,
        "summary": headline,
        # One line, bounded: the pipeline's Fail step and a notifier read it (gate.py).
        "first_line": _first_line(verdict, headline),
        "failed_checks": ", ".join(c["name"] for c in failed) or "none",
        "undecided_checks": ", ".join(c["name"] for c in undecided) or "none",
        "recommendation": recommendation,
        # Always a string, so the pipeline's Fail step can read it with JsonGet.
        "to_decide": (recommendation["why"] if recommendation else None) or "none",
        "bakeoff": config.get("bakeoff"),
        "spec_hash": config.get("spec_hash"),
        "parity": cast(ParityRecord, {**parity, "baseline": base, "power": power, "target_used": target,
                                      "target_basis": target_basis}),
        "rule": _rule_record(config, parity),
        "sequential": design,
        "looks": config.get("looks"),  # the decisions taken on these seeds before this one (looks.json)
        "speed": speed,
        "cost_basis": config.get("cost_basis", "estimate"),
        "legs": figures,
        "checks": cast("list[Check]", checks),  # built as plain dicts by each kind's own module
        "measured": registry.measured(measured),
        **scaling.sections(config, figures, checks, runs_by_leg, emulated),  # scaling.<leg>, ablations
        "porting": porting.section(config, figures, base),  # what porting cost, per leg against the baseline
        "fixed_design": fixed_design(parity, checks, figures),  # what 80% power would have cost (the report)
    }
    if config.get("decision"):  # the production run the bake-off decides: cost, saving, break-even
        from bakeoff_runtime.verdict.projection import project

        evaluation["projection"] = project(evaluation, config["decision"])
    attempt = config.get("attempt")
    if attempt:  # which attempt at the question this is (pipelines/local/questions.py), stage-1 figures left out
        evaluation["attempt"] = cast("JSON", {k: v for k, v in attempt.items() if k != "stage1"})
    return evaluation


# What a failed check is a failure of, in the words the verdict's first line starts with: a comparison
# that did not measure what it names comes first (it voids the rest), then broken training, then parity.
_FAIL_WORDS = (("backend", "not a valid comparison"), ("same-model", "not a valid comparison"),
               ("seeds", "not a valid comparison"), ("stability", "training breaks"), ("parity", "parity fails"))
FIRST_LINE_CHARS = 600


def _fail_rank(check: dict[str, Any]) -> int:
    kind = check["name"].split(":", 1)[0]
    return next((i for i, (k, _) in enumerate(_FAIL_WORDS) if k == kind), len(_FAIL_WORDS))


def _headline(verdict: str, failed: list[dict[str, Any]], undecided: list[dict[str, Any]], stuck: list[str],
              parity: dict[str, Any], base: str, metric: str) -> str:
    """The verdict in words, its cause first: what a person reads before anything else."""
    if verdict == "pass":
        return (f"parity holds: every leg is {stats.test_of(parity['test']).shown} {base} on {metric} within the "
                "margin")
    if verdict == "fail":
        ordered = sorted(failed, key=_fail_rank)
        words = _FAIL_WORDS[_fail_rank(ordered[0])][1] if _fail_rank(ordered[0]) < len(_FAIL_WORDS) else "fail"
        return f"{words}: " + "; ".join(f"{c['name']}: {c['why']}" for c in ordered)
    if stuck:
        return "the bake-off could not run: " + "; ".join(stuck)
    return "inconclusive: " + "; ".join(f"{c['name']}: {c['why']}" for c in undecided)


def _first_line(verdict: str, headline: str) -> str:
    line = " ".join(headline.split())
    line = line if len(line) <= FIRST_LINE_CHARS else line[:FIRST_LINE_CHARS - 3] + "..."
    return f"{verdict}: {line}" if not line.startswith(verdict) else line


def _could_not_run(runs_by_leg: dict[str, list[dict]], checks: list[dict[str, Any]],
                   config: EvaluationConfig) -> list[str]:
    """For each counted leg none of whose jobs trained to an outcome (completed or diverged), and whose
    failure is not shown to be the leg's own (its stability check did not fail), what stopped it: then
    the bake-off did not run, and no number of seeds decides it."""
    out = []
    shown = {c["name"].split(":", 1)[1] for c in checks
             if c["name"].startswith("stability:") and c["status"] == "failed"}
    ablations = set(scaling.ablation_legs(config))
    for leg, runs in runs_by_leg.items():
        if leg in ablations or leg in shown or not runs or any(r["status"] in (COMPLETED, DIVERGED) for r in runs):
            continue
        first = next((r for r in runs if r["kind"] != "doomed"), runs[0])
        who = WHO_MUST_ACT.get(first["kind"] or "", first["kind"] or "no result")
        out.append(f"no job of {leg} completed ({who}): {first['reason'] or 'no reason recorded'}")
    return out


def _overall_recommendation(undecided: list[dict[str, Any]], legs_cfg: dict[str, LegConfig]) -> Recommendation:
    """The advice of every undecided check, with the most seeds any of them asks for (a check that needs a
    fix rather than seeds says so in `why`; the count is for the checks that seeds decide), and the next
    step of the design where the parity checks share one (stage 2's fresh seeds, a fresh start)."""
    planned = max((len(c.get("seeds", [])) for c in legs_cfg.values()), default=0)
    seeds, whys, nexts = [], [], set()
    fresh: list[int] = []
    for c in undecided:
        rec = c.get("recommendation")
        if rec:
            seeds.append(rec["seeds"])
            whys.append(f"{c['name']}: {rec['why']}")
            if rec.get("next"):
                nexts.add(rec["next"])
            fresh = max(fresh, rec.get("fresh_seeds") or [], key=len)
        elif c.get("lost_seeds") is not None:
            seeds.append(planned)
            whys.append(f"{c['name']}: re-run the seeds that gave no result ({', '.join(map(str, c['lost_seeds']))}); "
                        "a re-run into the same directory runs only those")
    known = [s for s in seeds if s is not None]
    out: Recommendation = {"seeds": max(known) if known else None, "why": "; ".join(whys)}
    if len(nexts) == 1:
        out["next"] = next(iter(nexts))
        if fresh and out["next"] == "stage 2":
            out["fresh_seeds"] = fresh
    return out


def write_evaluation(evaluation: Evaluation, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "evaluation.json"
    tmp = path.with_suffix(".json.tmp")
    # Strict JSON: a bare NaN or Infinity is not JSON, and strict parsers (and the pipeline's JsonGet
    # readers) reject it. A non-finite number is written as null; its run's reason says what it was.
    tmp.write_text(json.dumps(strict_json(evaluation), indent=2, sort_keys=True, default=str, allow_nan=False)
                   + "\n")
    tmp.replace(path)
    return path


def strict_json(value: Any) -> Any:
    """`value` with every non-finite float replaced by None, so it serialises as strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    return value
