"""An execution's evaluation costed by what SageMaker billed: each training job's BillableTimeInSeconds.
(Here, below both the API and the `--until-decided` rounds, which both read executions.)"""
from __future__ import annotations

from bakeoff_runtime.contract.documents import Evaluation


def apply_billable_time(evaluation: Evaluation, billable: dict[tuple[str, int], float]) -> Evaluation:
    """Re-cost an evaluation with SageMaker's BillableTimeInSeconds per job: every cost field,
    through the evaluation step's own cost function. That needs no numpy or scipy (a report on bakeoff's core),
    unless the evaluation carries a projection (the spec's `decision:`), whose t intervals are projected again."""
    if evaluation.get("projection"):
        from bakeoff.pipelines.extras import require_stats

        require_stats("re-costing an evaluation that carries a projection (the spec's decision:)")
    from bakeoff_runtime.verdict.figures import recost

    return recost(
        evaluation, billable, "SageMaker BillableTimeInSeconds x instance count x on-demand price per hour")
