"""What happened to each job: the job records classified (completed, diverged, failed, lost), one run per
(leg, seed), and a lost run for each planned seed no job answered for.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypeGuard

from bakeoff_runtime.contract.documents import JobRecord, LegConfig
from bakeoff_runtime.verdict.job_outputs import named_job

# Run states. `lost` is an infrastructure loss (a signal, a timeout, no output): it says
# nothing about the leg, so it can make a verdict inconclusive but never a failure.
COMPLETED, DIVERGED, FAILED, LOST = "completed", "diverged", "failed", "lost"
LOST_KINDS = ("interrupted", "killed", "infrastructure", "timeout")
ABSURD = 1e30  # a parity metric beyond this is a blown-up run, not a measurement


def _finite(v: object) -> TypeGuard[float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


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


def _as_seed(value: Any) -> int | None:
    """A job's seed as the plan names seeds (a whole number), or None for one that is not."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def collect_runs(legs_cfg: Mapping[str, LegConfig], jobs: list[JobRecord], metric: str) -> dict[str, list[dict]]:
    """Each leg's runs, one per seed: the first job record of each (leg, seed), classified; a planned seed with
    no record is a lost run. A precompile job and a record of no known leg or whole-number seed are left out."""
    out: dict[str, list[dict]] = {name: [] for name in legs_cfg}
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
        if not isinstance(leg, str) or leg not in out or seed is None or (leg, seed) in seen \
                or s and s.get("precompile"):
            continue
        state, kind, reason = classify(job, metric)
        billable = meta.get("billable_s")
        if billable is None and s is not None:
            billable = s.get("wall_time_s")
        out[leg].append({"seed": seed, "status": state, "kind": kind, "reason": reason, "job": job["dir"],
                         "job_key": meta.get("job_key"), "summary": s or {}, "billable_s": billable,
                         "digest": job["digest"]})
        seen.add((leg, seed))
    empty = {"train_curve": [], "evals": [], "train_records": 0, "first_nonfinite_train_step": None}
    for name, cfg in legs_cfg.items():
        for seed in cfg.get("seeds", []):
            if (name, seed) not in seen:
                out[name].append({"seed": seed, "status": LOST, "kind": "no-output", "job": None,
                                  "reason": "no output from this job", "summary": {}, "billable_s": None,
                                  "digest": empty})
    return out
