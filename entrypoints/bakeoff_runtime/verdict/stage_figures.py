"""The two-stage design's names and what a stage-1 parity check leaves for stage 2: standard library
only, so the local engine's own process (pipelines/local/questions.py) records attempts without
importing numpy or scipy. Those start threads (OpenBLAS) in the process that forks the training jobs,
and a fork of a process with threads that then runs Python before exec (the jobs' parent-death
preexec_fn) can deadlock in the child: a `kill -9`'d run then left such a child behind. The design's
arithmetic is verdict/two_stage.py, in the Evaluate step's process."""
from __future__ import annotations

from typing import Any

TWO_STAGE, FIXED = "two_stage", "fixed"
DESIGNS = (TWO_STAGE, FIXED)


def stage_record(check: dict[str, Any]) -> dict[str, Any] | None:
    """What stage 2 needs of a stage-1 parity check: its difference, standard error and degrees of
    freedom, the test, the seeds and the differences' skewness (None when the check had no interval)."""
    if check.get("test") not in ("paired", "welch") or check.get("se") is None:
        return None
    return {"test": check["test"], "diff": float(check["diff"]), "se": float(check["se"]), "df": float(check["df"]),
            "n_pairs": int(check.get("n_pairs") or 0), "seeds": [s for s, _ in check.get("per_seed_diffs") or []],
            "skewness": float(check.get("skewness") or 0.0)}
