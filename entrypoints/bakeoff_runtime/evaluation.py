"""The evaluation step: read every job's summary, decide parity, figure the cost.

Runs the same way locally and as a SageMaker ProcessingStep. Reads files only
(summary.json, metrics.jsonl, optional job.json), never MLflow, so a tracking
server being down cannot change a verdict.
"""
from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

from . import stats

EVALUATION_SCHEMA = "bakeoff.evaluation/1"


def _from_tar(path: Path, name: str) -> bytes | None:
    try:
        with tarfile.open(path) as tar:
            for member in tar.getmembers():
                if member.name.rsplit("/", 1)[-1] == name:
                    return tar.extractfile(member).read()
    except (tarfile.TarError, OSError, ValueError):
        return None
    return None


def _records(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a torn last line of a job that died mid-write
    return out


def load_jobs(jobs_dir: Path) -> list[dict[str, Any]]:
    """One record per job directory: its summary (or None) and its job.json, if any."""
    jobs = []
    for job_dir in sorted(p for p in Path(jobs_dir).iterdir() if p.is_dir()):
        summary, records = None, []
        for path in sorted(job_dir.rglob("summary.json")):
            summary = json.loads(path.read_text())
            metrics = path.with_name("metrics.jsonl")
            records = _records(metrics.read_text()) if metrics.exists() else []
            break
        if summary is None:
            for path in sorted(job_dir.rglob("*.tar.gz")):
                raw = _from_tar(path, "summary.json")
                if raw:
                    summary = json.loads(raw)
                    records = _records((_from_tar(path, "metrics.jsonl") or b"").decode())
                    break
        meta_path = job_dir / "job.json"
        meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
        failure = next(iter(sorted(job_dir.rglob("output/failure"))), None)
        jobs.append({"dir": job_dir.name, "summary": summary, "meta": meta, "records": records,
                     "failure": failure.read_text().strip() if failure else None})
    return jobs


def _mean(values):
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def _curve(records: list[dict], kind: str, key: str, limit: int = 200) -> list[list[float]]:
    points = [[r["step"], r[key]] for r in records if r.get("kind") == kind and isinstance(r.get(key), (int, float))]
    stride = max(1, -(-len(points) // limit))
    keep = points[::stride]
    if points and keep[-1] is not points[-1]:
        keep.append(points[-1])
    return keep


def _reached(records: list[dict], metric: str, target: float | None, direction: str):
    """(step, seconds since the job started) when the validation metric first reached `target`."""
    if target is None:
        return None, None
    for r in records:
        v = r.get(metric)
        if r.get("kind") == "eval" and isinstance(v, (int, float)) and (
                v <= target if direction == "minimize" else v >= target):
            return r["step"], r.get("time_s")
    return None, None


def resolve_target(parity: dict, runs_by_leg: dict[str, list[dict]]) -> tuple[float | None, str]:
    """The declared target, else the worst value still at parity with the baseline."""
    if parity.get("target") is not None:
        return float(parity["target"]), "declared in the spec"
    base = [r["summary"]["metrics"][parity["metric"]] for r in runs_by_leg.get(parity["baseline"], [])
            if r["status"] == "completed" and parity["metric"] in (r["summary"].get("metrics") or {})]
    if not base:
        return None, "no baseline runs to derive a target from"
    mean = sum(base) / len(base)
    margin = float(parity["margin"]) * (abs(mean) if parity.get("margin_type") == "relative" else 1.0)
    target = mean + margin if parity.get("direction", "minimize") == "minimize" else mean - margin
    return target, f"baseline mean {mean:.4g} {'+' if parity.get('direction', 'minimize') == 'minimize' else '-'} margin"


def _leg_figures(name: str, leg_cfg: dict, runs: list[dict], parity: dict,
                 target: float | None = None) -> dict[str, Any]:
    metric = parity["metric"]
    price = leg_cfg.get("price") or {}
    per_hour = price.get("usd_per_hour")
    count = int(leg_cfg.get("instance_count", 1))
    completed = [r for r in runs if r["status"] == "completed" and r["summary"].get("metrics", {}).get(metric) is not None]
    values = [r["summary"]["metrics"][metric] for r in completed]
    rows = []
    for r in runs:
        s = r["summary"] or {}
        billable = r["billable_s"]
        cost = billable * count * per_hour / 3600 if (billable is not None and per_hour) else None
        tokens = (s.get("throughput") or {}).get("units_processed")
        steps_to_target, time_to_target = _reached(r.get("records") or [], metric, target,
                                                   parity.get("direction", "minimize"))
        rows.append({
            "steps_to_target": steps_to_target,
            "time_to_target_s": time_to_target,
            "cost_to_target_usd": (time_to_target * count * per_hour / 3600
                                   if time_to_target is not None and per_hour else None),
            "training_time_s": s.get("training_time_s"),
            "curves": {"train_loss": _curve(r.get("records") or [], "train", "train_loss"),
                       metric: _curve(r.get("records") or [], "eval", metric)},
            "environment": s.get("environment"),
            "seed": r["seed"], "status": r["status"], "reason": r["reason"],
            metric: (s.get("metrics") or {}).get(metric),
            "throughput": (s.get("throughput") or {}).get(f"{(s.get('throughput') or {}).get('unit', 'tokens')}_per_sec"),
            "time_to_first_step_s": s.get("time_to_first_step_s"),
            "compile_time_s": (s.get("compile") or {}).get("compile_time_s"),
            "compiled_graphs": (s.get("compile") or {}).get("compiled_graphs"),
            "peak_device_memory_bytes": s.get("peak_device_memory_bytes"),
            "peak_host_memory_bytes": s.get("peak_host_memory_bytes"),
            "wall_time_s": s.get("wall_time_s"),
            "billable_s": billable, "cost_usd": cost,
            "cost_per_million_units_usd": (cost / (tokens / 1e6)) if cost is not None and tokens else None,
            "steps_completed": s.get("steps_completed"),
            "mlflow_run_id": (s.get("mlflow") or {}).get("run_id"),
            "cache_state": ((s.get("compile") or {}).get("cache") or {}).get("state"),
            "cache_hits": ((s.get("compile") or {}).get("cache") or {}).get("hits"),
            "cache_misses": ((s.get("compile") or {}).get("cache") or {}).get("misses"),
        })
    unit = next(((r["summary"].get("throughput") or {}).get("unit") for r in completed), "tokens")
    return {
        "image": leg_cfg.get("image"),
        "instance_type": leg_cfg.get("instance_type"), "instance_count": count,
        "backend": leg_cfg.get("backend"), "precision": leg_cfg.get("precision"),
        "devices": leg_cfg.get("devices"), "emulated_on": leg_cfg.get("emulated_on"),
        "seeds": sorted(r["seed"] for r in runs),
        "runs": rows,
        "completed": len(completed),
        "failed": sum(1 for r in runs if r["status"] == "failed"),
        "diverged": sum(1 for r in runs if r["status"] == "diverged"),
        "metric": {"name": metric, **stats.describe(values)},
        "throughput_unit": f"{unit}/s",
        "throughput_mean": _mean(x["throughput"] for x in rows if x["status"] == "completed"),
        "time_to_first_step_s_mean": _mean(x["time_to_first_step_s"] for x in rows),
        "compile_time_s_mean": _mean(x["compile_time_s"] for x in rows),
        "training_time_s_mean": _mean(x["training_time_s"] for x in rows),
        "steps_to_target_mean": _mean(x["steps_to_target"] for x in rows),
        "cost_to_target_usd_mean": _mean(x["cost_to_target_usd"] for x in rows),
        "reached_target": sum(1 for x in rows if x["steps_to_target"] is not None),
        "peak_device_memory_bytes_max": max((x["peak_device_memory_bytes"] or 0 for x in rows), default=None) or None,
        "peak_host_memory_bytes_max": max((x["peak_host_memory_bytes"] or 0 for x in rows), default=None) or None,
        "wall_time_s_mean": _mean(x["wall_time_s"] for x in rows),
        "billable_s_mean": _mean(x["billable_s"] for x in rows),
        "cost_per_run_usd_mean": _mean(x["cost_usd"] for x in rows),
        "cost_per_million_units_usd_mean": _mean(x["cost_per_million_units_usd"] for x in rows),
        "price": price,
        "compile_cache": _cache_split(rows),
    }


def _cache_split(rows: list[dict]) -> dict[str, Any] | None:
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


def _parity_check(leg: str, base: str, figures: dict, parity: dict) -> dict[str, Any]:
    a = figures[base]["metric"].get("values") or []
    b = figures[leg]["metric"].get("values") or []
    name = f"parity:{leg}~{base}"
    if len(a) < 2 or len(b) < 2:
        return {"name": name, "status": "insufficient_replicates", "passed": False,
                "why": f"{parity['metric']} needs >= 2 completed seeds per leg for an equivalence test; "
                       f"have {len(b)} ({leg}) and {len(a)} ({base}): nothing can be concluded"}
    margin = float(parity["margin"])
    if parity.get("margin_type") == "relative":
        margin = margin * abs(stats.describe(a)["mean"])
    result = stats.tost(a, b, -margin, margin, float(parity["alpha"]))
    result["bootstrap_ci95"] = stats.bootstrap_diff_ci(a, b)
    lo, hi = result["ci"]
    level = int(round(result["ci_level"] * 100))
    if result["equivalent"]:
        why = (f"equivalent: {parity['metric']} difference {result['diff']:+.4g} ({leg} - {base}), "
               f"{level}% CI [{lo:+.4g}, {hi:+.4g}] inside +/-{margin:.4g}; TOST p={result['p_value']:.3g} < "
               f"alpha={parity['alpha']}")
    else:
        why = (f"not shown equivalent: {parity['metric']} difference {result['diff']:+.4g} ({leg} - {base}), "
               f"{level}% CI [{lo:+.4g}, {hi:+.4g}] not inside +/-{margin:.4g}; TOST p={result['p_value']:.3g} "
               f">= alpha={parity['alpha']}")
    return {"name": name, "status": "passed" if result["equivalent"] else "failed",
            "passed": result["equivalent"], "why": why, "test": "TOST (two one-sided Welch t-tests)",
            "margin": margin, **{k: result[k] for k in ("diff", "p_value", "p_lower", "p_upper", "ci", "ci_level",
                                                         "df", "se", "bootstrap_ci95")}}


def _stability_check(leg: str, figures: dict) -> dict[str, Any]:
    f = figures[leg]
    bad = [r for r in f["runs"] if r["status"] != "completed"]
    if not bad:
        return {"name": f"stability:{leg}", "status": "passed", "passed": True,
                "why": f"all {len(f['runs'])} runs completed"}
    reasons = "; ".join(f"seed {r['seed']} {r['status']}: {r['reason'] or 'no reason recorded'}" for r in bad)
    return {"name": f"stability:{leg}", "status": "failed", "passed": False,
            "why": f"{len(bad)} of {len(f['runs'])} runs did not complete ({reasons})"}


def evaluate(config: dict[str, Any], jobs: list[dict[str, Any]]) -> dict[str, Any]:
    parity = config["parity"]
    legs_cfg = config["legs"]
    by_leg: dict[str, list[dict]] = {name: [] for name in legs_cfg}
    seen: set[tuple[str, int]] = set()
    for job in jobs:
        s = job["summary"]
        leg = (s or {}).get("leg") or job["meta"].get("leg")
        seed = (s or {}).get("seed", job["meta"].get("seed"))
        if leg not in by_leg:
            continue
        status = (s or {}).get("status") or "failed"
        reason = (s or {}).get("reason") or job.get("failure") or job["meta"].get("reason")
        if s is None:
            reason = reason or "the job left no summary.json"
        billable = job["meta"].get("billable_s")
        if billable is None and s is not None:
            billable = s.get("wall_time_s")
        by_leg[leg].append({"seed": seed, "status": status, "reason": reason, "summary": s or {},
                            "billable_s": billable, "records": job.get("records") or []})
        seen.add((leg, seed))
    for name, cfg in legs_cfg.items():
        for seed in cfg.get("seeds", []):
            if (name, seed) not in seen:
                by_leg[name].append({"seed": seed, "status": "failed", "reason": "no output from this job",
                                     "summary": {}, "billable_s": None, "records": []})

    base = parity["baseline"]
    target, target_basis = resolve_target(parity, by_leg)
    figures = {name: _leg_figures(name, legs_cfg[name], runs, parity, target) for name, runs in by_leg.items()}
    checks = [_stability_check(name, figures) for name in legs_cfg]
    checks += [_parity_check(name, base, figures, parity) for name in legs_cfg if name != base]
    failed = [c for c in checks if c["status"] == "failed"]
    unknown = [c for c in checks if c["status"] == "insufficient_replicates"]
    verdict = "fail" if failed else ("inconclusive" if unknown else "pass")
    for name, f in figures.items():
        if name != base:
            check = next(c for c in checks if c["name"] == f"parity:{name}~{base}")
            f["parity"] = check["status"]
    headline = {
        "pass": f"parity holds: every leg is equivalent to {base} on {parity['metric']} within the margin",
        "fail": "parity fails: " + "; ".join(f"{c['name']}: {c['why']}" for c in failed),
        "inconclusive": "inconclusive: " + "; ".join(f"{c['name']}: {c['why']}" for c in unknown),
    }[verdict]
    return {
        "schema": EVALUATION_SCHEMA,
        "verdict": verdict,
        "summary": headline,
        "failed_checks": ", ".join(c["name"] for c in failed + unknown) or "none",
        "bakeoff": config.get("bakeoff"),
        "spec_hash": config.get("spec_hash"),
        "parity": {**parity, "baseline": base, "target_used": target, "target_basis": target_basis},
        "cost_basis": config.get("cost_basis", "estimate"),
        "legs": figures,
        "checks": checks,
    }


def write_evaluation(evaluation: dict[str, Any], out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "evaluation.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(evaluation, indent=2, sort_keys=True, default=str) + "\n")
    tmp.replace(path)
    return path
