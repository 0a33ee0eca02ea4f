"""The decision: what one production run would take and cost on each leg, what moving it saves, with
an interval, and after how many runs the porting work pays back.

Pure arithmetic on an evaluation (each leg's per-seed steady-state throughput, its time to the first
step cold and warm, billed start-up, its price, a scaling sweep where one ran) and the decision's
inputs (contract/decision.py). The Evaluate step, `bakeoff project` and the report all call
`project`, so they cannot disagree.

The model, stated in the README's decision section:
- a production run processes `units` at the leg's steady-state throughput, scaled to its instance
  count by the measured per-worker scaling efficiency (interpolated in log2 of the instance count
  inside the sweep's range; outside it, or with no sweep, an extrapolation that says so and widens
  the interval by SCALING_UNCERTAINTY per doubling beyond what was measured);
- plus the time to its first step: cold (compile) for the first run, warm for the runs that share
  the compile cache; plus billed start-up outside the script (SageMaker's billed time less the
  job's wall time);
- cost = instances x on-demand price x (1 - discount) x run time x (1 + interruption overhead);
- the seeds' uncertainty: each seed's throughput gives a projected cost (linearised around the mean);
  the difference between legs is paired where the seeds pair, Welch otherwise, with a Student t
  interval at the decision's confidence.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import fmean, stdev
from typing import Any, cast

from bakeoff_runtime.contract.decision import (
    PERIOD_WEEKS,
    PROJECTION_SCHEMA,
    Comparison,
    DecisionConfig,
    Interval,
    LegProjection,
    Projection,
)

SCALING_UNCERTAINTY = 0.10  # relative, per doubling of instances beyond the measured range
COMPLETED = "completed"


def default_decision() -> DecisionConfig:
    """The bake-off's own size, once a quarter, on demand, no porting effort: what `project` uses for
    what the decision leaves out."""
    return {"production": {"units": None, "unit": None, "steps": None, "batch": None}, "instances": {},
            "runs_per_period": 1.0, "period": "quarter", "purchase": {},
            "porting": {"hours_spent": 0.0, "hours_expected": 0.0, "usd_per_hour": 0.0}, "confidence": 0.9}


def _t(q: float, df: float) -> float:
    from bakeoff_runtime.verdict.stats import t_quantile

    return t_quantile(q, df)


def _interval(values: Sequence[float], confidence: float) -> Interval:
    """Mean and Student t interval of per-seed values (a point where there is one seed)."""
    if not values:
        return {"mean": None, "low": None, "high": None}
    mean = fmean(values)
    if len(values) < 2:
        return {"mean": mean, "low": None, "high": None}
    half = _t(0.5 + confidence / 2, len(values) - 1) * stdev(values) / math.sqrt(len(values))
    return {"mean": mean, "low": mean - half, "high": mean + half}


def _welch(a: Sequence[float], b: Sequence[float], confidence: float) -> Interval:
    """Mean of a minus mean of b, with Welch's interval."""
    if not a or not b:
        return {"mean": None, "low": None, "high": None}
    diff = fmean(a) - fmean(b)
    if len(a) < 2 or len(b) < 2:
        return {"mean": diff, "low": None, "high": None}
    va, vb = stdev(a) ** 2 / len(a), stdev(b) ** 2 / len(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return {"mean": diff, "low": diff, "high": diff}
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    half = _t(0.5 + confidence / 2, df) * se
    return {"mean": diff, "low": diff - half, "high": diff + half}


# --- scaling -----------------------------------------------------------------------------------------
def scaling_factor(measured: int, production: int, sweep: Sequence[Mapping[str, Any]] | None
                   ) -> dict[str, Any]:
    """How a job's throughput at `measured` instances carries to `production` instances: `factor`
    multiplies it; `low`/`high` bound the factor (wider outside what was measured); `basis` says how."""
    ratio = production / measured
    points = sorted({int(p["instance_count"]): float(p["efficiency"]) for p in sweep or []
                     if p.get("efficiency") and p.get("instance_count")}.items())
    if production == measured:
        return {"basis": "as measured", "factor": 1.0, "low": 1.0, "high": 1.0, "efficiency": 1.0,
                "note": f"{production} instance(s), as in the bake-off"}
    if len(points) < 2:
        doublings = abs(math.log2(ratio))
        return {"basis": "assumed linear", "factor": ratio,
                "low": ratio * max(0.0, 1 - SCALING_UNCERTAINTY * doublings), "high": ratio, "efficiency": 1.0,
                "note": f"no sweep measured scaling across instance counts: linear scaling from {measured} to "
                        f"{production} instances assumed (an upper bound; the interval allows "
                        f"{SCALING_UNCERTAINTY:.0%} less per doubling)"}
    counts = [c for c, _ in points]
    eff_measured = _efficiency_at(points, measured)
    eff = _efficiency_at(points, production)
    factor = ratio * eff / eff_measured
    lo_c, hi_c = counts[0], counts[-1]
    if lo_c <= production <= hi_c and lo_c <= measured <= hi_c:
        return {"basis": "interpolated", "factor": factor, "low": factor, "high": factor, "efficiency": eff,
                "note": f"per-worker efficiency {eff:.2f} at {production} instances, interpolated between the "
                        f"sweep's measured {lo_c}-{hi_c} instances"}
    beyond = max(abs(math.log2(production / hi_c)) if production > hi_c else 0.0,
                 abs(math.log2(lo_c / production)) if production < lo_c else 0.0)
    widen = SCALING_UNCERTAINTY * max(beyond, 1.0)
    return {"basis": "extrapolated", "factor": factor, "low": factor * max(0.0, 1 - widen),
            "high": factor * (1 + widen), "efficiency": eff,
            "note": f"per-worker efficiency {eff:.2f} at {production} instances, extrapolated beyond the sweep's "
                    f"measured {lo_c}-{hi_c} instances (the interval widens {SCALING_UNCERTAINTY:.0%} per doubling "
                    "beyond them)"}


def _efficiency_at(points: Sequence[tuple[int, float]], count: int) -> float:
    """Per-worker efficiency at `count` instances: linear in log2(count) between the measured points, and
    along the nearest measured segment beyond them (kept above zero, at most 1.0 beyond the smallest)."""
    xs = [math.log2(c) for c, _ in points]
    ys = [e for _, e in points]
    x = math.log2(count)
    i = 0
    while i < len(xs) - 2 and x > xs[i + 1]:
        i += 1
    x0, x1, y0, y1 = xs[i], xs[i + 1], ys[i], ys[i + 1]
    y = y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return min(max(y, 0.01), max(ys[0], 1.0))


# --- one leg -----------------------------------------------------------------------------------------
def _seed_throughputs(leg: Mapping[str, Any]) -> dict[int, float]:
    return {int(r["seed"]): float(r["throughput"]) for r in leg.get("runs") or []
            if r.get("status") == COMPLETED and isinstance(r.get("throughput"), (int, float)) and r["throughput"] > 0}


def _units_per_step(leg: Mapping[str, Any]) -> float | None:
    per = [r["units_processed"] / r["steps_completed"] for r in leg.get("runs") or []
           if r.get("status") == COMPLETED and r.get("units_processed") and r.get("steps_completed")]
    return fmean(per) if per else None


def production_units(leg: Mapping[str, Any], decision: DecisionConfig) -> tuple[float | None, str]:
    """The production run's units in the leg's measured unit, and how they were read (or why not)."""
    unit = (leg.get("throughput_unit") or "tokens/s").split("/")[0]
    run = decision["production"]
    if run.get("units"):
        if run.get("unit") and run["unit"] != unit:
            return None, (f"the production run is stated in {run['unit']}, but this leg's throughput was measured in "
                          f"{unit}/s: state it in {unit} (decision.production.units with unit: {unit}), or in steps")
        return float(run["units"] or 0.0), f"{run['units']:.4g} {unit}"
    per_step = _units_per_step(leg)
    if run.get("steps"):
        if per_step is None:
            return None, f"the bake-off's runs recorded no {unit} per step, so steps cannot be converted"
        scale, note = 1.0, "at the bake-off's batch"
        if run.get("batch"):
            measured = decision.get("measured_batch")
            if not measured:
                return None, ("decision.production.batch needs the bake-off's batch, which a script-mode spec does "
                              "not declare: state the production run in units instead")
            scale, note = float(run["batch"] or 1.0) / float(measured), f"at batch {run['batch']:g}"
        units = float(run["steps"] or 0.0) * per_step * scale
        return units, f"{run['steps']:.4g} steps {note} ({per_step * scale:.4g} {unit} per step, measured)"
    processed = [r["units_processed"] for r in leg.get("runs") or []
                 if r.get("status") == COMPLETED and r.get("units_processed")]
    if not processed:
        return None, "the decision states no production size and the bake-off's runs recorded none"
    return fmean(processed), f"{fmean(processed):.4g} {unit}: the bake-off's own run (no production size given)"


def _overheads(leg: Mapping[str, Any]) -> tuple[float, float, float]:
    """(time to first step cold, warm, billed start-up outside the script), seconds."""
    split = leg.get("compile_cache") or {}
    mean_first = leg.get("time_to_first_step_s_mean") or 0.0
    cold = split.get("time_to_first_step_s_cold") or mean_first
    warm = split.get("time_to_first_step_s_warm")
    warm = cold if warm is None else warm
    billed = [r["billable_s"] - r["wall_time_s"] for r in leg.get("runs") or []
              if r.get("billable_s") and r.get("wall_time_s") and r["billable_s"] > r["wall_time_s"]]
    return float(cold), float(warm), fmean(billed) if billed else 0.0


def _effective_price(name: str, leg: Mapping[str, Any], decision: DecisionConfig) -> tuple[float | None, dict, float]:
    """(USD per instance-hour after the purchase option, the price's record, the interruption overhead)."""
    price = leg.get("price") or {}
    purchase = decision["purchase"].get(name) or {"option": "on_demand", "discount_pct": 0.0,
                                                  "interruption_overhead_pct": 0.0}
    on_demand = price.get("usd_per_hour")
    overhead = float(purchase.get("interruption_overhead_pct") or 0.0) / 100
    per_hour = on_demand * (1 - float(purchase.get("discount_pct") or 0.0) / 100) if on_demand else None
    record = {"on_demand_usd_per_hour": on_demand, "source": price.get("source"), "as_of": price.get("as_of"),
              **purchase}
    return per_hour, record, overhead


def project_leg(name: str, leg: Mapping[str, Any], decision: DecisionConfig,
                sweep: Sequence[Mapping[str, Any]] | None) -> tuple[LegProjection, dict[int, float]]:
    """One leg's production run, and each seed's projected warm run cost (linearised around the mean
    throughput: the per-seed values whose spread is the cost's uncertainty)."""
    measured = int(leg.get("instance_count") or 1)
    instances = int(decision["instances"].get(name) or measured)
    per_seed = _seed_throughputs(leg)
    units, how = production_units(leg, decision)
    per_hour, price, overhead = _effective_price(name, leg, decision)
    scaling = scaling_factor(measured, instances, sweep)
    unit = (leg.get("throughput_unit") or "tokens/s").split("/")[0]
    empty: Interval = {"mean": None, "low": None, "high": None}
    out: LegProjection = {
        "instance_type": leg.get("instance_type"), "instances": instances, "instances_measured": measured,
        "unit": unit, "seeds": len(per_seed), "scaling": scaling, "throughput": empty, "hours_per_run": empty,
        "first_run_extra_hours": 0.0, "usd_per_instance_hour": per_hour, "price": price,
        "cost_per_run_usd": empty, "first_run_cost_usd": None, "amortised_cost_per_run_usd": None,
        "cost_per_period_usd": empty, "rests_on": [],
        "reason": None}
    if units is None:
        out["reason"] = how
        return out, {}
    if not per_seed:
        out["reason"] = "no seed completed with a steady-state throughput"
        return out, {}
    cold, warm, billed = _overheads(leg)
    confidence = decision["confidence"]
    factor = scaling["factor"]
    mean_tp = fmean(per_seed.values())
    tp = _interval([t * factor for t in per_seed.values()], confidence)
    out["throughput"] = {"mean": tp["mean"],
                         "low": None if tp["low"] is None else tp["low"] * scaling["low"] / factor,
                         "high": None if tp["high"] is None else tp["high"] * scaling["high"] / factor}

    def hours(throughput: float, start_s: float) -> float:
        return (units / throughput + start_s + billed) * (1 + overhead) / 3600

    # d(hours)/d(throughput) at the mean: each seed's deviation carried to hours, then to dollars.
    slope = -units / (mean_tp * factor) ** 2 * (1 + overhead) / 3600
    warm_hours = {s: hours(mean_tp * factor, warm) + slope * (t - mean_tp) * factor for s, t in per_seed.items()}
    h = _interval(list(warm_hours.values()), confidence)
    low_f, high_f = scaling["low"] / factor, scaling["high"] / factor
    out["hours_per_run"] = {"mean": h["mean"],
                            "low": None if h["low"] is None else _rescaled(h["low"], units, mean_tp * factor, high_f,
                                                                           overhead),
                            "high": None if h["high"] is None else _rescaled(h["high"], units, mean_tp * factor, low_f,
                                                                             overhead)}
    out["first_run_extra_hours"] = max(0.0, cold - warm) * (1 + overhead) / 3600
    out["rests_on"] = [
        f"steady-state throughput of {len(per_seed)} seed(s): {mean_tp:.4g} {unit}/s at {measured} instance(s)",
        f"scaling to {instances} instance(s): {scaling['basis']} ({scaling['note']})",
        f"production size: {how}",
        f"time to first step: {cold:.0f} s cold, {warm:.0f} s warm (compile cache kept)"
        + (f"; billed start-up outside the script {billed:.0f} s" if billed else ""),
    ]
    if per_hour is None:
        out["reason"] = "the leg has no price, so no cost"
        return out, {}
    costs = {s: v * instances * per_hour for s, v in warm_hours.items()}
    c = _interval(list(costs.values()), confidence)
    scale = instances * per_hour
    out["cost_per_run_usd"] = {**_times(out["hours_per_run"], scale), "mean": c["mean"]}
    out["first_run_cost_usd"] = (c["mean"] or 0.0) + out["first_run_extra_hours"] * scale
    runs = decision["runs_per_period"]
    # The cold compile shared by a period's runs (the first run of a fresh cache pays it).
    out["amortised_cost_per_run_usd"] = (c["mean"] or 0.0) + out["first_run_extra_hours"] * scale / max(runs, 1.0)
    out["cost_per_period_usd"] = _times(out["cost_per_run_usd"], runs)
    out["rests_on"].append(f"price: {price['source'] or 'unknown source'}"
                           + (f" ({price['as_of']})" if price.get("as_of") else "")
                           + f", {price['option'].replace('_', ' ')}"
                           + (f" at {price['discount_pct']:g}% off" if price.get("discount_pct") else "")
                           + (f", {overhead:.0%} interruption overhead" if overhead else ""))
    return out, costs


def _rescaled(hours: float, units: float, throughput: float, factor_ratio: float, overhead: float) -> float:
    """An interval end of the hours, moved by the scaling's own uncertainty: the training part of the
    run at `factor_ratio` times the throughput."""
    training = units / throughput * (1 + overhead) / 3600
    return hours - training + training / factor_ratio


# --- the comparison ----------------------------------------------------------------------------------
def _parity_status(ev: Mapping[str, Any], leg: str, base: str) -> tuple[str, str | None]:
    check = next((c for c in ev.get("checks") or [] if c.get("name") == f"parity:{leg}~{base}"), None)
    if check is None:
        return "not compared", "no parity check compared it with the baseline"
    return str(check.get("status")), (None if check.get("status") == "passed" else str(check.get("why") or ""))


def break_even(porting: float, first: float | None, each: float | None) -> float | None:
    """Production runs until the cumulative saving (the first run's, then each later run's) covers the
    porting cost; None when it never does."""
    if first is None or each is None:
        return None
    if first >= porting:
        return 1.0
    if each <= 0:
        return None
    return 1.0 + math.ceil((porting - first) / each - 1e-9)


def compare(name: str, base: str, legs: Mapping[str, LegProjection], seeds: Mapping[str, dict[int, float]],
            ev: Mapping[str, Any], decision: DecisionConfig, porting: float) -> Comparison:
    status, why = _parity_status(ev, name, base)
    out: Comparison = {"leg": name, "baseline": base, "parity": status, "pairing": None, "saving_per_run_usd": None,
                       "saving_pct": None, "saving_per_period_usd": None, "porting_usd": porting,
                       "break_even_runs": None, "break_even_weeks": None, "never_pays_back": False, "reason": None}
    mine, theirs = legs[name], legs[base]
    if status != "passed":
        out["reason"] = f"no saving: parity with {base} is {status}" + (f" ({why})" if why else "")
        return out
    for leg, p in ((name, mine), (base, theirs)):
        if p["reason"]:
            out["reason"] = f"no saving: {leg} could not be projected ({p['reason']})"
            return out
    a, b = seeds[base], seeds[name]
    paired = sorted(set(a) & set(b))
    confidence = decision["confidence"]
    if len(paired) >= 2 and len(paired) == len(a) == len(b):
        s = _interval([a[k] - b[k] for k in paired], confidence)
        out["pairing"] = f"paired over {len(paired)} seeds"
    else:
        s = _welch(list(a.values()), list(b.values()), confidence)
        out["pairing"] = f"Welch ({len(b)} and {len(a)} seeds, unpaired)"
    # The scaling's own uncertainty: the target dearer and the baseline cheaper at the low end, and back.
    mc, bc = mine["cost_per_run_usd"], theirs["cost_per_run_usd"]
    m_mean, m_low, m_high, b_mean, b_low, b_high = (mc["mean"], mc["low"], mc["high"], bc["mean"], bc["low"],
                                                    bc["high"])
    if (s["low"] is not None and s["high"] is not None and m_mean is not None and m_low is not None
            and m_high is not None and b_mean is not None and b_low is not None and b_high is not None):
        extra_low = max(0.0, (m_high - m_mean) - _seed_half(b, confidence)) + \
            max(0.0, (b_mean - b_low) - _seed_half(a, confidence))
        extra_high = max(0.0, (m_mean - m_low) - _seed_half(b, confidence)) + \
            max(0.0, (b_high - b_mean) - _seed_half(a, confidence))
        s = {"mean": s["mean"], "low": s["low"] - extra_low, "high": s["high"] + extra_high}
    out["saving_per_run_usd"] = s
    out["saving_pct"] = _percent(s, b_mean, (m_low, m_high), (b_low, b_high))
    runs = decision["runs_per_period"]
    out["saving_per_period_usd"] = _times(s, runs)
    first_extra = (theirs["first_run_cost_usd"] or 0.0) - (b_mean or 0.0) - \
        ((mine["first_run_cost_usd"] or 0.0) - (m_mean or 0.0))

    def at(saving: float | None) -> float | None:
        return break_even(porting, None if saving is None else saving + first_extra, saving)

    # More saving pays back sooner: the interval's high saving is the low break-even.
    runs_at: Interval = {"mean": at(s["mean"]), "low": at(s["high"]), "high": at(s["low"])}
    out["break_even_runs"] = runs_at
    out["break_even_weeks"] = _times(runs_at, PERIOD_WEEKS[decision["period"]] / runs)
    out["never_pays_back"] = runs_at["mean"] is None
    return out


def _percent(saving: Interval, base: float | None, mine: tuple[float | None, float | None],
             theirs: tuple[float | None, float | None]) -> Interval | None:
    """The saving as a percent of the baseline's cost per run. Its ends stay inside what the two legs' cost
    intervals allow (1 - target/baseline): a saving never exceeds the baseline's whole cost."""
    if not base:
        return None
    pct = _times(saving, 100 / base)
    (m_low, m_high), (b_low, b_high) = mine, theirs
    if pct["high"] is not None and m_low is not None and b_high:
        pct["high"] = min(pct["high"], 100 * (1 - m_low / b_high))
    if pct["low"] is not None and m_high is not None and b_low:
        pct["low"] = max(pct["low"], 100 * (1 - m_high / b_low))
    return pct


def _times(i: Interval, k: float) -> Interval:
    """An interval with each end (where there is one) times `k`, a positive factor."""
    return {"mean": None if i["mean"] is None else i["mean"] * k, "low": None if i["low"] is None else i["low"] * k,
            "high": None if i["high"] is None else i["high"] * k}


def _seed_half(values: Mapping[int, float], confidence: float) -> float:
    """The half-width the seeds alone give a leg's cost (what the scaling widening is measured beyond)."""
    i = _interval(list(values.values()), confidence)
    return 0.0 if i["low"] is None else (i["high"] - i["low"]) / 2  # type: ignore[operator]


# --- the whole projection ----------------------------------------------------------------------------
def project(ev: Mapping[str, Any], decision: DecisionConfig | None = None) -> Projection:
    """The projection of an evaluation (a dict shaped as evaluation.json) under `decision`."""
    decision = _completed(decision)
    legs_ev: Mapping[str, Any] = ev.get("legs") or {}
    base = (ev.get("parity") or {}).get("baseline")
    derived = {p["leg"] for points in (ev.get("scaling") or {}).values() for p in points
               if p.get("leg") not in (ev.get("scaling") or {})}
    ablations = {a.get("ablation_leg") for a in ev.get("ablations") or []}
    declared = [n for n in legs_ev if n not in derived and n not in ablations]
    legs: dict[str, LegProjection] = {}
    seeds: dict[str, dict[int, float]] = {}
    for name in declared:
        legs[name], seeds[name] = project_leg(name, legs_ev[name], decision, (ev.get("scaling") or {}).get(name))
    porting_cfg = decision["porting"]
    porting = (porting_cfg["hours_spent"] + porting_cfg["hours_expected"]) * porting_cfg["usd_per_hour"]
    comparisons = [compare(n, base, legs, seeds, ev, decision, porting) for n in declared
                   if base in legs and n != base]
    emulated = bool((ev.get("speed") or {}).get("emulated"))
    units = {n: production_units(legs_ev[n], decision) for n in declared}
    out: Projection = {
        "schema": PROJECTION_SCHEMA, "confidence": decision["confidence"], "emulated": emulated,
        "label": ("from emulated speeds on this machine: the arithmetic of the decision, not its answer (real "
                  "figures come from a SageMaker run)" if emulated else
                  f"from {ev.get('cost_basis') or 'the jobs'}"),
        "period": decision["period"], "runs_per_period": decision["runs_per_period"],
        "production": {"decision": decision["production"], "per_leg": {n: how for n, (_, how) in units.items()}},
        "porting_usd": porting, "legs": legs, "comparisons": comparisons, "sentence": "", "decision": decision,
        "assumptions": assumptions()}
    out["sentence"] = sentence(out)
    return out


def _completed(decision: Mapping[str, Any] | None) -> DecisionConfig:
    out = cast(dict, default_decision())
    for key, value in (decision or {}).items():
        if value is not None:
            out[key] = {**out[key], **value} if isinstance(out.get(key), dict) and isinstance(value, dict) else value
    return cast(DecisionConfig, out)


def assumptions() -> list[str]:
    return [
        "run time is linear in the units processed, at the steady-state throughput the bake-off measured",
        "scaling to another instance count follows the measured per-worker efficiency (interpolated in log2 of "
        f"the count; beyond the measured range, or with no sweep, it is extrapolated and the interval widens "
        f"{SCALING_UNCERTAINTY:.0%} per doubling)",
        "the first production run compiles cold; the runs after it share the compile cache (warm)",
        "not modelled: data-loading limits at scale, capacity availability, price changes, checkpoint and "
        "evaluation time beyond what the bake-off's runs included",
    ]


def _money(v: float | None) -> str:
    if v is None:
        return "-"
    return f"${v:,.0f}" if abs(v) >= 100 else f"${v:,.2f}"


def _runs(v: float | None) -> str:
    return "never" if v is None else f"{v:.0f}"


def sentence(p: Projection) -> str:
    """The decision in one sentence, with its interval."""
    level = f"{p['confidence']:.0%}"
    parts = []
    for c in p["comparisons"]:
        mine, theirs = p["legs"][c["leg"]], p["legs"][c["baseline"]]
        where = f"{mine['instances']} x {mine['instance_type']}"
        there = f"{theirs['instances']} x {theirs['instance_type']}"
        mc = mine["cost_per_run_usd"]
        if c["reason"] and mc["mean"] is None:
            parts.append(f"{c['leg']}: {c['reason']}")
            continue
        text = (f"on {where}, one production run would cost {_money(mc['mean'])}"
                + (f" ({level} interval {_money(mc['low'])}-{_money(mc['high'])})" if mc["low"] is not None else "")
                + f" against {_money(theirs['cost_per_run_usd']['mean'])} on {there}")
        if c["reason"]:  # the whole reason is beside the figure: the sentence stays one line
            short = (f"no saving: parity with {c['baseline']} is {c['parity']}" if c["parity"] != "passed"
                     else c["reason"])
            parts.append(f"{text}; {short}")
            continue
        empty: Interval = {"mean": None, "low": None, "high": None}
        s, pct, n = c["saving_per_run_usd"] or empty, c["saving_pct"] or empty, c["break_even_runs"] or empty
        saves = (s.get("mean") or 0) >= 0
        # A loss is said as a loss, its interval too (a 120% to 380% loss, not -380% to -120%).
        low, high = pct["low"], pct["high"]
        if not saves:
            low, high = (None if high is None else -high), (None if low is None else -low)
        text += (f": {'a saving' if saves else 'a loss'} of {abs(pct.get('mean') or 0):.0f}% per run"
                 + (f" ({level} interval {low:.0f}% to {high:.0f}%)" if low is not None and high is not None
                    else ""))
        if c["porting_usd"]:
            if c["never_pays_back"]:
                text += f"; the {_money(c['porting_usd'])} of porting never pays back at this saving"
            else:
                text += (f"; the {_money(c['porting_usd'])} of porting pays back after {_runs(n.get('mean'))} run(s) "
                         f"(interval {_runs(n.get('low'))} to {_runs(n.get('high'))})")
        parts.append(text)
    body = "; ".join(parts) if parts else "no leg could be compared with the baseline"
    if p["emulated"]:
        return f"Emulated speeds, not a decision: {body}."
    return body[0].upper() + body[1:] + "."
