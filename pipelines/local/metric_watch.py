"""Stop a bake-off whose parity metric nobody reports, after its first seed.

A misspelt `parity.metric` (or a script that logs the metric under another name) would
otherwise run every seed of every leg to an inconclusive verdict: when every job of the first
seed completed and none of them reported the metric, the run stops there as bad input (exit 2)
naming the metrics the jobs did report, so the fix is one line of the spec."""
from __future__ import annotations

from pathlib import Path

from bakeoff_runtime.contract.documents import summary_or_none


def unreported(metric: str, job_dirs: list[Path]) -> list[str] | None:
    """The metrics the jobs reported, when every one completed and none reported `metric`;
    None when any job has it, or any did not complete (a crash says nothing of the name)."""
    seen: set[str] = set()
    for job_dir in job_dirs:
        summary = summary_or_none(job_dir / "opt" / "ml" / "model" / "summary.json")
        if summary is None or summary.get("status") != "completed":
            return None
        metrics = summary.get("metrics") or {}
        if metric in metrics:
            return None
        seen.update(metrics)
    return sorted(seen)
