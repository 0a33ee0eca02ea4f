"""The figures of each leg: its runs' rows (speed, time and cost to target, compile and memory), its
throughput and spread, the compile cache's cold and warm starts, and the costs `recost` redoes from billed time.
"""
from __future__ import annotations

import json
from statistics import fmean, stdev
from typing import Any, cast

from bakeoff_runtime.contract.documents import (
    CostMeans,
    Evaluation,
    LegConfig,
    LegFigures,
    LegThroughput,
    MetricFigures,
    Price,
    RunRow,
    Spread,
    run_metric,
)
from bakeoff_runtime.verdict import sweeps as scaling
from bakeoff_runtime.verdict.runs import COMPLETED, DIVERGED, FAILED, LOST, _finite

THROUGHPUT_SPREAD_LIMIT = 0.20   # a leg whose seeds' throughput varies more than this is flagged
CROSSCHECK_LIMIT = 0.25          # synced vs overall throughput may differ this much before it is flagged
CROSSCHECK_MIN_WINDOW_S = 2.0    # shorter steady windows are too short to cross-check


def _mean(values):
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


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
    """stats.describe's figures less its t interval, in the standard library: `recost` (a report of a SageMaker
    execution) then runs on bakeoff's core, without the stats extra's numpy and scipy."""
    vals = [float(v) for v in values]
    n = len(vals)
    if n == 0:
        return {"mean": None, "std": None, "cv": None, "min": None, "max": None, "n": 0, "relative_range": None}
    mean = fmean(vals)
    sd = stdev(vals) if n > 1 else None
    cv = (sd / abs(mean)) if sd is not None and mean != 0 else None
    rel = (max(vals) - min(vals)) / mean if n > 1 and mean else None
    return {"mean": mean, "std": sd, "cv": cv, "min": min(vals), "max": max(vals), "n": n, "relative_range": rel}


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
    from bakeoff_runtime.verdict import stats  # numpy: here, so that `recost` runs without it

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
