"""Script mode's summary.json: what the step hook measured and the metrics the script reported,
in the same schema the Runtime writes, so the evaluation reads both modes alike.

Throughput comes from the hook's device-synchronised clock: the median time per optimizer step
over the synchronised intervals after warm-up (a median, because the script's own evaluation
and checkpointing fall between steps, where bakeoff cannot see them), times the units per step
the spec declares. Torch-free: the launcher composes it after the script has exited.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import statistics
from pathlib import Path
from typing import Any

from bakeoff_runtime.contract import SUMMARY_SCHEMA, JobEnvironment, TrainingEnv
from bakeoff_runtime.contract.script_mode import LEG_HP, SEED_HP, ScriptSettings
from bakeoff_runtime.training.telemetry import host_environment


def throughput(probe: dict[str, Any], settings: ScriptSettings) -> dict[str, Any]:
    unit = settings.unit
    steps = int(probe.get("steps") or 0)
    out: dict[str, Any] = {"unit": unit, "steady_state_from_step": settings.warmup_steps,
                           "units_per_step": settings.units_per_step,
                           "units_processed": (settings.units_per_step or 0) * steps or None,
                           "timing": "device-synchronised every "
                                     f"{settings.sync_interval} optimizer steps by the step hook; median "
                                     "step time after warm-up (time between steps, the script's own "
                                     "validation included, is in the intervals it falls in)"}
    points = [(int(s), float(t)) for s, t in probe.get("synced") or [] if int(s) >= settings.warmup_steps]
    intervals = [(t1 - t0) / (s1 - s0) for (s0, t0), (s1, t1) in zip(points, points[1:], strict=False)
                 if s1 > s0 and t1 > t0]
    if not intervals:
        out[f"{unit}_per_sec"] = None
        out["note"] = (f"too few optimizer steps after warm-up to measure a steady state ({steps} steps, "
                       f"{settings.warmup_steps} of warm-up, synchronised every {settings.sync_interval})")
        return out
    step_time = statistics.median(intervals)
    window = points[-1][1] - points[0][1]
    measured = points[-1][0] - points[0][0]
    out.update({"step_time_s": step_time, "measured_steps": measured, "window_s": round(window, 4)})
    if settings.units_per_step:
        out[f"{unit}_per_sec"] = settings.units_per_step / step_time
        out["overall_per_sec"] = settings.units_per_step * measured / window if window > 0 else None
    else:
        out[f"{unit}_per_sec"] = None
        out["note"] = "entrypoint.script_mode.units_per_step is not declared: step times only"
    return out


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def compose(env: TrainingEnv, settings: ScriptSettings, *, probe: dict[str, Any] | None,
            series: dict[str, list[float]], status: str, reason: str | None, failure_kind: str | None,
            arguments: list[str], metric_source: str, wall_time_s: float) -> dict[str, Any]:
    job = JobEnvironment.from_environ()
    hps = env.hyperparameters
    probe = probe or {}
    losses = series.get(settings.loss_metric) or []
    metrics = {name: values[-1] for name, values in series.items() if values}
    bad = next((f"{name} is {values[-1]}" for name, values in series.items()
                if values and name in (settings.loss_metric, settings.parity_metric) and not _finite(values[-1])),
               None)
    if status == "completed" and bad:
        status, reason = "diverged", f"{bad} (read from the script's output)"
    started = probe.get("started_at")
    first = probe.get("first_step_at")
    summary: dict[str, Any] = {
        "schema": SUMMARY_SCHEMA, "mode": "script", "status": status, "reason": reason,
        **({"failure_kind": failure_kind} if failure_kind else {}),
        "bakeoff": job.name, "leg": hps.get(LEG_HP) or job.leg, "seed": hps.get(SEED_HP),
        "backend": job.backend, "precision": job.precision,
        "instance_type": job.instance_type or env.instance_type, "instance_count": env.host_count,
        "emulated_on": job.emulated_on or None, "job_key": job.job_key or None, "spec_hash": job.spec_hash or None,
        "compile_cache": job.compile_cache or None,
        # The workers' world, as rank 0 saw it (this launcher is not one of them).
        "world_size": int((probe.get("evidence") or {}).get("processes") or os.environ.get("WORLD_SIZE", 1) or 1),
        "script_arguments": arguments, "metric_source": metric_source,
        "steps_completed": probe.get("steps"), "max_steps": None,
        "first_train_loss": losses[0] if losses else None,
        "final_train_loss": losses[-1] if losses else None,
        "metrics": {k: (v if _finite(v) else str(v)) for k, v in metrics.items()},
        "validation_history": [],
        "throughput": throughput(probe, settings),
        "time_to_first_step_s": round(first - started, 3) if first and started else None,
        "first_step_s": None,
        "training_time_s": round(probe["ended_at"] - first, 3) if first and probe.get("ended_at") else None,
        "compile": probe.get("compile") or {},
        "peak_device_memory_bytes": probe.get("peak_device_memory_bytes"),
        "model": probe.get("model"),
        "evidence": probe.get("evidence"),
        "step_basis": probe.get("step_basis"),
        "environment": {**host_environment(), **(probe.get("versions") or {}),
                        "backend_device": probe.get("backend_device") or "unknown (the step hook left no record)"},
        "wall_time_s": round(wall_time_s, 3),
        "step_hook": probe.get("hook"),
    }
    if probe.get("backend_unavailable"):
        summary.setdefault("warnings", []).append(f"the leg's backend was not available here: "
                                                  f"{probe['backend_unavailable']}")
    if not probe:
        summary.setdefault("warnings", []).append("the step hook left no record (the script ended before its "
                                                  "first optimizer step, or its process was killed)")
    return summary


def write(env: TrainingEnv, summary: dict[str, Any]) -> None:
    """summary.json in the model dir, and its copy in output/data (the small output.tar.gz the
    Evaluate step reads)."""
    body = json.dumps(summary, indent=2, sort_keys=True, default=str)
    for directory in (env.model_dir, env.output_data_dir):
        directory.mkdir(parents=True, exist_ok=True)
        tmp = directory / "summary.json.tmp"
        tmp.write_text(body)
        os.replace(tmp, directory / "summary.json")
    metrics = env.model_dir / "metrics.jsonl"
    if metrics.exists():
        shutil.copyfile(metrics, env.output_data_dir / "metrics.jsonl")  # in chunks: it can be gigabytes
    from bakeoff_runtime.contract.output_digest import record

    for directory in (env.model_dir, env.output_data_dir):  # the Evaluate step checks it
        record(directory)


def read_probe(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
