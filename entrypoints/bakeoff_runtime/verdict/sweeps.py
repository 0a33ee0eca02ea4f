"""Scaling sweeps and precision ablations in the evaluation.

The evaluation config names each sweep (`scaling`: declared leg -> its mode and legs, the
declared size first) and each ablation (`ablations`). Every derived leg was evaluated like
any leg; this module reads those figures into `scaling.<leg>` (one point per size) and
`ablations`, and marks the ablation legs' checks as outside the verdict: an ablation is a
diagnosis of the leg it comes from, not another candidate.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bakeoff_runtime.contract.documents import ScalingSections

EFFICIENCY_BASIS = ("throughput per worker process relative to the sweep's smallest size (ideal 1.0); on SageMaker "
                    "a worker is a device, locally a process of this machine")


def ablation_legs(config: Mapping[str, Any]) -> set[str]:
    return {a["ablation_leg"] for a in config.get("ablations") or []}


def _check_leg(name: str) -> str:
    # "stability:LEG" or "parity:LEG~BASE"
    return name.split(":", 1)[-1].split("~", 1)[0]


def mark_checks(config: Mapping[str, Any], checks: list[dict[str, Any]]) -> None:
    """An ablation leg's checks are reported but do not count toward the verdict."""
    ablations = ablation_legs(config)
    if not ablations:
        return
    for c in checks:
        counts = _check_leg(c["name"]) not in ablations
        c["counts_toward_verdict"] = counts
        if not counts:
            c["ablation"] = True


def counts(check: dict[str, Any]) -> bool:
    return bool(check.get("counts_toward_verdict", True))


def _processes(leg_cfg: Mapping[str, Any], runs: list[dict[str, Any]]) -> int:
    """The world size the leg's jobs really ran at: from their summaries, else the plan."""
    seen = [int(r["summary"]["world_size"]) for r in runs
            if isinstance((r.get("summary") or {}).get("world_size"), int) and r["summary"]["world_size"] > 0]
    if seen:
        return max(set(seen), key=seen.count)
    return int(leg_cfg.get("local_processes") or leg_cfg.get("devices") or 1)


def _point(name: str, cfg: Mapping[str, Any], fig: Mapping[str, Any], runs: list[dict], global_batch: int | None,
           emulated: bool) -> dict[str, Any]:
    unit = (fig.get("throughput_unit") or "tokens/s").split("/")[0]
    return {
        "leg": name, "instance_type": cfg.get("instance_type"), "instance_count": cfg.get("instance_count"),
        "devices": cfg.get("devices"), "processes": _processes(cfg, runs),
        "global_batch_size": cfg.get("global_batch_size") or global_batch,
        "throughput": fig.get("throughput_mean"), "throughput_unit": fig.get("throughput_unit"),
        "throughput_range": [(fig.get("throughput") or {}).get("min"), (fig.get("throughput") or {}).get("max")],
        "completed": fig.get("completed"), "seeds": len(fig.get("seeds") or []),
        "metric_mean": (fig.get("metric") or {}).get("mean"), "parity": fig.get("parity"),
        "usd_per_million_units": fig.get("cost_per_million_units_usd_mean"), "unit": unit,
        "cost_per_run_usd": fig.get("cost_per_run_usd_mean"), "emulated": emulated,
    }


def _with_efficiency(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    points = sorted(points, key=lambda p: (p["devices"] or 0, p["leg"]))
    ref = next((p for p in points if p["throughput"]), None)
    for p in points:
        if ref is None or not p["throughput"]:
            p["speedup"] = p["efficiency"] = None
            continue
        p["speedup"] = p["throughput"] / ref["throughput"]
        p["efficiency"] = (p["throughput"] / p["processes"]) / (ref["throughput"] / ref["processes"])
    return points


def _sweep_note(mode: str, points: list[dict[str, Any]], emulated: bool) -> str:
    held = ("strong scaling: the global batch is held at every size, so each device gets less work as devices grow"
            if mode == "strong" else
            "weak scaling: the per-device batch is held, so the global batch grows with the devices (parity at "
            "larger sizes compares a different global batch: a drift there may be the batch, not the port)")
    if not emulated:
        return held + "."
    ran = "; ".join(f"{p['leg']}: {p['processes']} process{'es' if p['processes'] != 1 else ''} for "
                    f"{p['devices']} devices" for p in points)
    return (f"{held}. Emulated on this machine ({ran}): the figures describe this machine's CPU and the code path, "
            "not the target hardware's scaling; real figures come from SageMaker.")


def _reading(a: dict[str, Any]) -> str:
    lp, ap = a["leg_parity"], a["ablation_parity"]
    prec, other = a["precision"], a["ablation_precision"]
    if lp is None:
        return (f"the baseline itself in {other}: the difference is what precision alone does to the metric on "
                "this hardware")
    if lp == "passed":
        return f"{a['leg']} is at parity in {prec}: no quality gap to explain; the {other} run is for reference"
    if ap == "passed":
        return (f"the gap closes in {other}: it comes with {prec} numerics (autocast, stochastic rounding, "
                "accumulation), not with the port")
    if lp == "failed" and ap == "failed":
        return f"the gap stays in {other}: precision does not explain it; look for a difference in the port"
    return "not decided: neither the leg nor its ablation is decided at this number of seeds"


def sections(config: Mapping[str, Any], figures: Mapping[str, Mapping[str, Any]], checks: list[dict[str, Any]],
             runs_by_leg: dict[str, list[dict[str, Any]]], emulated: bool) -> ScalingSections:
    """`scaling` (declared leg -> points), `scaling_sweeps` (mode, basis, note) and `ablations`;
    nothing for a spec that declares neither."""
    out: ScalingSections = {}
    sweeps = config.get("scaling") or {}
    if sweeps:
        out["scaling"], out["scaling_sweeps"] = {}, {}
        for source, sweep in sweeps.items():
            names = [n for n in sweep["legs"] if n in figures]
            points = _with_efficiency([_point(n, config["legs"][n], figures[n], runs_by_leg.get(n, []),
                                              sweep.get("global_batch_size"), emulated) for n in names])
            out["scaling"][source] = points
            out["scaling_sweeps"][source] = {"mode": sweep.get("mode", "strong"), "efficiency_basis": EFFICIENCY_BASIS,
                                             "emulated": emulated,
                                             "note": _sweep_note(sweep.get("mode", "strong"), points, emulated)}
    ablations = []
    status = {c["name"]: c["status"] for c in checks}
    base = config["parity"]["baseline"]
    for a in config.get("ablations") or []:
        leg, abl = a["leg"], a["ablation_leg"]
        means = {n: ((figures.get(n) or {}).get("metric") or {}).get("mean") for n in (leg, abl)}
        mean, ablation_mean = means[leg], means[abl]
        item = {**a, "comparison": f"parity:{abl}~{base}",
                "leg_parity": None if leg == base else status.get(f"parity:{leg}~{base}"),
                "ablation_parity": status.get(f"parity:{abl}~{base}"),
                "metric_mean": means.get(leg), "ablation_metric_mean": means.get(abl),
                "precision_effect": (mean - ablation_mean) if mean is not None and ablation_mean is not None else None,
                "counts_toward_verdict": False}
        item["reading"] = _reading(item)
        ablations.append(item)
    if ablations:
        out["ablations"] = ablations
    return out


def refresh_costs(ev: Mapping[str, Any]) -> None:
    """After the legs' costs were redone from billed time (`recost`), the points follow."""
    for points in (ev.get("scaling") or {}).values():
        for p in points:
            leg = (ev.get("legs") or {}).get(p["leg"]) or {}
            p["usd_per_million_units"] = leg.get("cost_per_million_units_usd_mean")
            p["cost_per_run_usd"] = leg.get("cost_per_run_usd_mean")
