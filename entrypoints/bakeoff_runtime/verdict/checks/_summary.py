"""What the validity checks read of a job's summary: the completed runs' records, a part read as an object."""
from __future__ import annotations

from typing import Any

COMPLETED = "completed"


def _records(runs: list[dict]) -> list[dict]:
    # The run's state as the evaluation classified it (a summary that says "completed" about a metric that is
    # no number is a failed run), not the summary's own word.
    return [r["summary"] for r in runs if r.get("summary") and r.get("status", r["summary"].get("status"))
            in (COMPLETED, "diverged")]


def _object(value: Any) -> dict:
    """A part of a summary read as an object: a job writes its summary, so a part of another type is nothing."""
    return value if isinstance(value, dict) else {}
