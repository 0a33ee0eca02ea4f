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
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeGuard, cast

from bakeoff_runtime.contract import EVALUATION_SCHEMA  # one id for the writer here and the reader (documents.py)
from bakeoff_runtime.contract.documents import (
    JSON,
    Check,
    CostMeans,
    Evaluation,
    EvaluationConfig,
    JobRecord,
    LegConfig,
    LegFigures,
    LegThroughput,
    MetricFigures,
    ParityRecord,
    Price,
    Recommendation,
    RuleRecord,
    RunRow,
    Speed,
    Spread,
    run_metric,
)
from bakeoff_runtime.contract.failure_kinds import NOT_THE_LEGS, WHO_MUST_ACT
from bakeoff_runtime.verdict import group_sequential, multiplicity, porting, stats, two_stage, validity
from bakeoff_runtime.verdict import sweeps as scaling
from bakeoff_runtime.verdict.fixed_design import fixed_design
from bakeoff_runtime.verdict.job_outputs import (
    load_jobs,  # noqa: F401  (re-exported: the evaluation's input)
    named_job,
)
from bakeoff_runtime.verdict.two_stage import Stage

EMULATED_LABEL = "emulated: not indicative of the target hardware"
THROUGHPUT_SPREAD_LIMIT = 0.20   # a leg whose seeds' throughput varies more than this is flagged
CROSSCHECK_LIMIT = 0.25          # synced vs overall throughput may differ this much before it is flagged
CROSSCHECK_MIN_WINDOW_S = 2.0    # shorter steady windows are too short to cross-check
RULE_KEYS = ("metric", "direction", "margin", "margin_type", "alpha", "test", "baseline", "resolution")

# Run states. `lost` is an infrastructure loss (a signal, a timeout, no output): it says
# nothing about the leg, so it can make a verdict inconclusive but never a failure.
COMPLETED, DIVERGED, FAILED, LOST = "completed", "diverged", "failed", "lost"
LOST_KINDS = ("interrupted", "killed", "infrastructure", "timeout")
ABSURD = 1e30  # a parity metric beyond this is a blown-up run, not a measurement


def _finite(v: object) -> TypeGuard[float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _mean(values):
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


# --- what happened to each job --------------------------------------------------------------
def classify(job: JobRecord, metric: str) -> tuple[str, str | None, str | None]:
    """(state, failure kind, reason) of one job from its summary, job.json and failure file."""
    s, meta = job.get("summary"), job.get("meta") or {}
    code = meta.get("exit_code")
    if meta.get("lost") or meta.get("timed_out") or (isinstance(code, int) and code < 0):
        return LOST, meta.get("failure_kind") or "infrastructure", meta.get("reason") or "the job was killed"
    if s is None:
        if job.get("summary_problem"):
            return LOST, job.get("summary_problem_kind") or "unreadable-output", job["summary_problem"]
        failure = job.get("failure")
        if failure:
            return FAILED, "script", failure.splitlines()[0][:500]
        return LOST, "no-output", meta.get("reason") or "the job left no summary.json"
    status = s.get("status")
    reason = s.get("reason") or (job.get("failure") or "").split("\n")[0] or None
    if status == DIVERGED:
        return DIVERGED, None, reason or "diverged"
    if status == FAILED:
        kind = s.get("failure_kind") or "script"
        return ((LOST if kind in LOST_KINDS else FAILED), kind,
                reason or f"the job reported `failed` ({kind}) and no reason")
    if status == COMPLETED:
        value = (s.get("metrics") or {}).get(metric)
        if value is None:
            seen = ", ".join(sorted(s.get("metrics") or {})) or "none"
            if s.get("mode") == "script":
                return FAILED, "no-metric", (
                    f"the script reports no {metric!r} (it reported: {seen}; read from {s.get('metric_source')}): "
                    f"fix the regex of {metric!r} in entrypoint.script_mode.metrics so that it matches a line the "
                    "script prints, or use the Runtime")
            return FAILED, "no-metric", (f"the script reports no {metric!r} (it reported: {seen}); log it with "
                                         f"rt.log_validation(step, {metric}=...), declare a metric regex in script "
                                         "mode, or fix parity.metric")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return FAILED, "script", f"the parity metric {metric!r} is not a number (got {str(value)[:60]!r})"
        if not _finite(value):
            return DIVERGED, None, f"{metric} is {value} in a run that reported completion"
        if abs(value) > ABSURD:  # finite, but no model reports it: its mean and spread would overflow
            return DIVERGED, None, f"{metric} is {value:.3g}, beyond {ABSURD:.0e}: counted as diverged"
        return COMPLETED, None, None
    return LOST, "unknown", f"unknown job status {status!r}"


# --- per-leg figures -------------------------------------------------------------------------
def _reached(evals: list[dict], metric: str, target: float | None, direction: str):
    """(step, seconds since the job started) when the validation metric first reached `target`."""
    if target is None:
        return None, None
    for r in evals:
        v = r.get(metric)
        if _finite(v) and (v <= target if direction == "minimize" else v >= target):
            step, time_s = r.get("step"), r.get("time_s")
            return (step if _finite(step) else None), (time_s if _finite(time_s) else None)
    return None, None


def resolve_target(parity: dict, values_by_leg: dict[str, dict[int, float]]) -> tuple[float | None, str]:
    """The declared target, else the worst value still at parity with the baseline."""
    if parity.get("target") is not None:
        return float(parity["target"]), "declared in the spec"
    base = list(values_by_leg.get(parity["baseline"], {}).values())
    if not base:
        return None, "no baseline runs to derive a target from"
    mean = sum(base) / len(base)
    margin = float(parity["margin"]) * (abs(mean) if parity.get("margin_type") == "relative" else 1.0)
    sign = "+" if parity.get("direction", "minimize") == "minimize" else "-"
    target = mean + margin if sign == "+" else mean - margin
    return target, f"baseline mean {mean:.4g} {sign} margin"


def _curve_points(evals: list[dict], key: str) -> list[list[float]]:
    return [[r["step"], r[key]] for r in evals if _finite(r.get(key)) and _finite(r.get("step"))]


def job_costs(billable_s: float | None, instance_count: int, usd_per_hour: float | None,
              units: float | None, time_to_target_s: float | None, wall_s: float | None) -> dict[str, float | None]:
    """Every cost figure of one job, from its billed time: the one cost function (the evaluation
    uses it, and so does `bakeoff report ARN` once SageMaker's BillableTimeInSeconds is known).
    Cost to target: what the job would have cost had it stopped at the target, i.e. the billed
    time outside the training process (start-up, image pull, upload) plus the time to the target."""
    cost = billable_s * instance_count * usd_per_hour / 3600 if (billable_s is not None and usd_per_hour) else None
    to_target = None
    if cost is not None and usd_per_hour and time_to_target_s is not None:
        overhead = max(0.0, billable_s - wall_s) if (billable_s is not None and wall_s is not None) else 0.0
        to_target = (overhead + time_to_target_s) * instance_count * usd_per_hour / 3600
    return {"cost_usd": cost,
            "cost_per_million_units_usd": (cost / (units / 1e6)) if cost is not None and units else None,
            "cost_to_target_usd": to_target}


def _n(value: Any) -> float | None:
    """A figure a job reported, if it is a finite number (a job writes its summary: anything else is none)."""
    return value if _finite(value) else None


def _o(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _run_row(run: dict, count: int, per_hour: float | None, metric: str, target, direction: str) -> RunRow:
    s = run["summary"] or {}
    tp = _o(s.get("throughput"))
    unit = tp.get("unit") if tp.get("unit") in ("tokens", "samples") else "tokens"
    billable = _n(run["billable_s"])
    units = _n(tp.get("units_processed"))
    evals = run["digest"]["evals"]
    steps_to_target, time_to_target = _reached(evals, metric, target, direction)
    value = _o(s.get("metrics")).get(metric)
    costs = job_costs(billable, count, per_hour, units, time_to_target, _n(s.get("wall_time_s")))
    compile_, cache = _o(s.get("compile")), _o(_o(s.get("compile")).get("cache"))
    # A cast, not a checked literal: one key is named by the parity metric.
    return cast(RunRow, {
        "seed": run["seed"], "status": run["status"], "failure_kind": run["kind"], "reason": run["reason"],
        "job": run["job"], "job_key": s.get("job_key") if isinstance(s.get("job_key"), str) else run.get("job_key"),
        metric: value if _finite(value) else None,
        "throughput": _n(tp.get(f"{unit}_per_sec")),
        "throughput_overall": _n(tp.get("overall_per_sec")),
        "throughput_timing": tp.get("timing") if isinstance(tp.get("timing"), str) else None,
        "throughput_window_s": _n(tp.get("window_s")),
        "steps_to_target": steps_to_target, "time_to_target_s": time_to_target,
        "training_time_s": _n(s.get("training_time_s")),
        "validation_time_s": _n(s.get("validation_time_s")),
        "curves": {"train_loss": run["digest"]["train_curve"], metric: _curve_points(evals, metric)},
        "environment": {str(k): str(v) for k, v in _o(s.get("environment")).items()},
        "time_to_first_step_s": _n(s.get("time_to_first_step_s")),
        "compile_time_s": _n(compile_.get("compile_time_s")),
        "compiled_graphs": _n(compile_.get("compiled_graphs")),
        "peak_device_memory_bytes": _n(s.get("peak_device_memory_bytes")),
        "peak_host_memory_bytes": _n(s.get("peak_host_memory_bytes")),
        "wall_time_s": _n(s.get("wall_time_s")),
        "units_processed": units,
        "billable_s": billable, **costs,
        "steps_completed": _n(s.get("steps_completed")),
        "mlflow_run_id": _o(s.get("mlflow")).get("run_id") if isinstance(_o(s.get("mlflow")).get("run_id"), str)
        else None,
        "cache_state": cache.get("state") if cache.get("state") in ("cold", "warm", "unknown") else None,
        "cache_hits": _n(cache.get("hits")),
        "cache_misses": _n(cache.get("misses")),
    })


def _spread(values: list[float]) -> Spread:
    d = stats.describe(values)
    rel = (d["max"] - d["min"]) / d["mean"] if d["n"] > 1 and d["mean"] else None
    return {"mean": d["mean"], "std": d["std"], "cv": d["cv"], "min": d["min"], "max": d["max"], "n": d["n"],
            "relative_range": rel}


def _throughput(rows: list[RunRow]) -> LegThroughput:
    """Steady-state throughput across seeds, its spread, and the cross-check against
    units over training time (with compile and validation taken out)."""
    # As plain mappings: their throughput figures are numbers here, which the filters show and mypy cannot see.
    ok = [cast("dict[str, Any]", r) for r in rows if r["status"] == COMPLETED and _finite(r.get("throughput"))]
    spread = _spread([r["throughput"] for r in ok])
    ratios = [r["throughput"] / r["throughput_overall"] for r in ok if _finite(r.get("throughput_overall"))
              and r["throughput_overall"] > 0 and (r.get("throughput_window_s") or 0) >= CROSSCHECK_MIN_WINDOW_S]
    spread_range = spread["relative_range"]
    return {**spread,
            "unstable": bool(spread_range is not None and spread_range > THROUGHPUT_SPREAD_LIMIT),
            "crosscheck_ratio": _mean(ratios),
            "crosscheck_disagrees": bool(ratios and any(abs(x - 1) > CROSSCHECK_LIMIT for x in ratios)),
            "timing": next((r.get("throughput_timing") for r in ok if r.get("throughput_timing")), None)}


def _leg_figures(name: str, leg_cfg: LegConfig, runs: list[dict], parity: dict, target,
                 emulated: bool) -> LegFigures:
    metric = parity["metric"]
    price: Price | dict[str, Any] = leg_cfg.get("price") or {}
    per_hour = price.get("usd_per_hour")
    count = int(leg_cfg.get("instance_count", 1))
    rows = [_run_row(r, count, per_hour, metric, target, parity.get("direction", "minimize")) for r in runs]
    completed = [r for r in rows if r["status"] == COMPLETED]
    values = [run_metric(r, metric) for r in completed]
    unit = next(((r["summary"].get("throughput") or {}).get("unit") for r in runs
                 if r["status"] == COMPLETED and r["summary"].get("throughput")), "tokens")
    reached = [r for r in rows if r["steps_to_target"] is not None]
    tp = _throughput(rows)
    return {
        "image": leg_cfg.get("image"),
        "instance_type": leg_cfg.get("instance_type"), "instance_count": count,
        "backend": leg_cfg.get("backend"), "precision": leg_cfg.get("precision"),
        "devices": leg_cfg.get("devices"), "emulated_on": leg_cfg.get("emulated_on"),
        "emulated": emulated,
        "seeds": sorted(r["seed"] for r in runs),
        "runs": sorted(rows, key=lambda r: r["seed"]),
        "completed": len(completed),
        "failed": sum(1 for r in rows if r["status"] == FAILED),
        "diverged": sum(1 for r in rows if r["status"] == DIVERGED),
        "lost": sum(1 for r in rows if r["status"] == LOST),
        "metric": cast(MetricFigures, {"name": metric, **stats.describe(values)}),
        "throughput_unit": f"{unit}/s",
        "throughput_mean": tp["mean"],
        "throughput": tp,
        "time_to_first_step_s_mean": _mean(x["time_to_first_step_s"] for x in rows),
        "compile_time_s_mean": _mean(x["compile_time_s"] for x in rows),
        "training_time_s_mean": _mean(x["training_time_s"] for x in rows),
        # Steps- and cost-to-target: a seed that never got there counts as not reached.
        "reached_target": len(reached),
        "reached_target_fraction": (len(reached) / len(rows)) if rows else None,
        "steps_to_target_mean": _mean(x["steps_to_target"] for x in reached) if len(reached) == len(rows) else None,
        "steps_to_target_mean_of_reached": _mean(x["steps_to_target"] for x in reached),
        **_cost_means(rows),
        "devices_used": _devices_used(leg_cfg, runs),
        "peak_device_memory_bytes_max": max((x["peak_device_memory_bytes"] or 0 for x in rows), default=None) or None,
        "peak_host_memory_bytes_max": max((x["peak_host_memory_bytes"] or 0 for x in rows), default=None) or None,
        "wall_time_s_mean": _mean(x["wall_time_s"] for x in rows),
        "price": price,
        "compile_cache": _cache_split(rows),
    }


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


def _devices_used(leg_cfg: LegConfig, runs: list[dict]) -> int | None:
    """Of the leg's devices, how many its jobs used: one per worker process they started (a plain script
    starts one per instance), or, where one process spread over several GPUs itself, the CUDA devices it
    allocated on. None where the config does not say (a Runtime trainer uses every device)."""
    per_host = leg_cfg.get("processes_per_host")
    devices = int(leg_cfg.get("devices") or 0)
    if per_host is None or not devices:
        return None
    count = int(leg_cfg.get("instance_count") or 1)
    spread = max(((r["summary"].get("evidence") or {}).get("cuda") or {}).get("devices_used") or 0
                 for r in runs) if runs else 0
    per_host_used = spread if per_host == 1 and spread > 1 else per_host
    return min(devices, per_host_used * count)


def _cost_means(rows: list[RunRow]) -> CostMeans:
    """A leg's cost figures from its runs' (the part `recost` redoes with billed time). A run's cost
    is what a run of the leg costs: from runs that trained to an outcome, not from jobs that
    crashed or produced nothing (what those spent is in the spend section, from every job)."""
    reached = [r for r in rows if r.get("steps_to_target") is not None]
    ran = [r for r in rows if r.get("status") in (COMPLETED, DIVERGED)]
    return {
        "billable_s_mean": _mean(x.get("billable_s") for x in ran),
        "cost_per_run": _spread([c for x in ran if (c := x.get("cost_usd")) is not None]),
        "cost_per_run_usd_mean": _mean(x.get("cost_usd") for x in ran),
        "cost_per_million_units_usd_mean": _mean(x.get("cost_per_million_units_usd") for x in ran),
        "cost_to_target_usd_mean": (_mean(x.get("cost_to_target_usd") for x in reached)
                                    if len(reached) == len(rows) else None),
        "cost_to_target_usd_mean_of_reached": _mean(x.get("cost_to_target_usd") for x in reached),
    }


def recost(evaluation: Evaluation, billable: dict[tuple[str, int], float], basis: str) -> Evaluation:
    """The evaluation with each job's cost from its billed seconds ((leg, seed) -> seconds),
    every cost field through the same job_costs as the evaluation step."""
    ev = json.loads(json.dumps(evaluation))
    for name, leg in ev["legs"].items():
        per_hour = (leg.get("price") or {}).get("usd_per_hour")
        count = int(leg.get("instance_count") or 1)
        for run in leg["runs"]:
            seconds = billable.get((name, int(run["seed"])))
            if seconds is None:
                continue
            run["billable_s"] = seconds
            run.update(job_costs(seconds, count, per_hour, run.get("units_processed"), run.get("time_to_target_s"),
                                 run.get("wall_time_s")))
        leg.update(_cost_means(leg["runs"]))
    scaling.refresh_costs(ev)  # the sweep's points quote the legs' costs
    if billable:
        ev["cost_basis"] = basis
    if ev.get("projection"):  # projected again from billed time, under the decision it was made with
        from bakeoff_runtime.verdict.projection import project

        ev["projection"] = project(ev, ev["projection"]["decision"])
    return ev


def _cache_split(rows: list[RunRow]) -> dict[str, Any] | None:
    """Cold vs warm starts: what the compile cache bought on this leg."""
    known = [r for r in rows if r.get("cache_state") in ("cold", "warm")]
    if not known:
        return None
    out: dict[str, Any] = {}
    for state in ("cold", "warm"):
        runs = [r for r in known if r["cache_state"] == state]
        out[f"{state}_runs"] = len(runs)
        out[f"time_to_first_step_s_{state}"] = _mean(r["time_to_first_step_s"] for r in runs)
        out[f"compile_time_s_{state}"] = _mean(r["compile_time_s"] for r in runs)
    cold, warm = out["time_to_first_step_s_cold"], out["time_to_first_step_s_warm"]
    out["warm_over_cold"] = (warm / cold) if cold and warm is not None else None
    return out


# --- checks ----------------------------------------------------------------------------------
def _g(v: float | None) -> str:
    return "-" if v is None else f"{v:+.4g}"


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


def _parity_check(leg: str, base: str, values: dict[str, dict[int, float]], parity: dict,
                  power: float, look_alpha: float | None = None, legs_compared: int = 1,
                  stage: Stage | None = None) -> dict[str, Any]:
    """`look_alpha`: the one-sided level this look reads (a sequential design's, or a two-stage design's
    stage 1); `stage`: the two-stage design's place (stage 2 carries stage 1's figures for this leg)."""
    metric, direction = parity["metric"], parity.get("direction", "minimize")
    test, alpha = parity.get("test", stats.EQUIVALENCE), float(parity["alpha"])
    stage = stage or Stage(design=two_stage.FIXED if look_alpha is None else "sequential")
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
    stage = stage or Stage(design=two_stage.FIXED)
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
    runs_by_leg: dict[str, list[dict]] = {name: [] for name in legs_cfg}
    seen: set[tuple[Any, Any]] = set()  # (leg, seed) as the job records give them
    for job in jobs:
        s, meta = job.get("summary"), job.get("meta") or {}
        said: Mapping[str, Any] = s or {}
        leg = said.get("leg") or meta.get("leg")
        seed = said.get("seed", meta.get("seed"))
        named = named_job(str(job.get("dir")))
        if named and (leg is None or job.get("summary_problem_kind") == "changed-output"):
            leg, seed = named  # what it was fetched as: a changed output's own words are not trusted
        elif named and (str(leg), str(seed)) == (named[0], str(named[1])):
            seed = named[1]  # the same seed, as a number (a job may write it as text)
        seed = _as_seed(seed)
        if not isinstance(leg, str) or leg not in runs_by_leg or seed is None or (leg, seed) in seen \
                or s and s.get("precompile"):
            continue
        state, kind, reason = classify(job, metric)
        billable = meta.get("billable_s")
        if billable is None and s is not None:
            billable = s.get("wall_time_s")
        runs_by_leg[leg].append({"seed": seed, "status": state, "kind": kind, "reason": reason, "job": job["dir"],
                                 "job_key": meta.get("job_key"), "summary": s or {}, "billable_s": billable,
                                 "digest": job["digest"]})
        seen.add((leg, seed))
    empty = {"train_curve": [], "evals": [], "train_records": 0, "first_nonfinite_train_step": None}
    for name, cfg in legs_cfg.items():
        for seed in cfg.get("seeds", []):
            if (name, seed) not in seen:
                runs_by_leg[name].append({"seed": seed, "status": LOST, "kind": "no-output", "job": None,
                                          "reason": "no output from this job", "summary": {}, "billable_s": None,
                                          "digest": empty})

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
    checks = [_stability_check(name, base, runs_by_leg, look_alpha, claims) for name in legs_cfg]
    if stage.number == 2:  # breakage over both stages: stage 1's McNemar p combined with this stage's
        for c in checks:
            _breakage_stage2(c, stage.breakage.get(c["name"].split(":", 1)[1]), alpha)
    checks += [_parity_check(name, base, values, parity, power, look_alpha, max(1, len(compared)), stage)
               for name in legs_cfg if name != base]
    measured = validity.checks(base, legs_cfg, runs_by_leg, metric)  # did it measure the target at all?
    checks += measured
    for c in measured:
        if c["name"].startswith("blockers:"):
            figures[c["name"].split(":", 1)[1]]["speed_representative"] = c.get("speed_representative", True)
    scaling.mark_checks(config, checks)  # an ablation leg's checks are reported, not counted
    multiplicity.apply(checks, len(compared), alpha)  # every claim a fail rests on, family-wise at alpha (Holm)
    failed = [c for c in checks if c["status"] == "failed" and scaling.counts(c)]
    undecided = [c for c in checks if c["status"] == "inconclusive" and scaling.counts(c)]
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
        "measured": validity.section(measured),
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


def _as_seed(value: Any) -> int | None:
    """A job's seed as the plan names seeds (a whole number), or None for one that is not."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


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
