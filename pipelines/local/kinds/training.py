"""The Training steps on this machine: every training job of the run as one batch (the step graph's
BATCH node), up to `--jobs` at once (parallel.py: DependsOn among them honoured, results read in plan
order so the doomed-leg rule decides as with `--jobs 1`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from bakeoff.pipelines.steps import training as compiled

from ..doomed import DoomWatch
from ..parallel import ParallelJobs
from ..step_graph import batch_constraints

if TYPE_CHECKING:
    from ..run_state import LocalRun

KIND = compiled.KIND


def run_local(run: LocalRun, node: str) -> None:
    x = run.executor
    # A leg already shown broken does not pay for its other seeds.
    watch = DoomWatch(x.spec, int(x.sequential["max_seeds"]) if x.sequential else None)
    runner = ParallelJobs(x, run.order, run.jobs, run.keys, run.reuse, run.stopped, watch, run.ctx, run.store, x.jobs,
                          x.use_gpu, after=batch_constraints(run.definition, compiled.is_step))
    x.parallel = runner
    per_leg: dict[str, int] = {}
    for name in run.order:
        per_leg[run.jobs[name].leg] = per_leg.get(run.jobs[name].leg, 0) + 1
    x.progress.start(len(run.order), x.jobs, per_leg)
    try:
        run.executed, run.skipped = runner.run()
    finally:
        x.parallel = None
        x.progress.stop()
