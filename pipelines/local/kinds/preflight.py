"""The Preflight step on this machine: the request as compiled, run like a training job; its
model.tar.gz published where the Evaluate step's input reads it. A blocker stops the run."""
from __future__ import annotations

from typing import TYPE_CHECKING

from bakeoff.pipelines.errors import RunError
from bakeoff.pipelines.names import PREFLIGHT_STEP
from bakeoff.pipelines.steps import preflight as compiled

from ..artifacts import artifact_uris, publish
from ..definition import Context, resolve

if TYPE_CHECKING:
    from ..run_state import LocalRun

KIND = compiled.KIND


def run_local(run: LocalRun, node: str) -> None:
    x, step = run.executor, run.steps[node]
    request = resolve(step["Arguments"], Context(run.params, "", ""))
    job_dir = x.out / "preflight" / "step"
    job = run.subs.training(PREFLIGHT_STEP, request, job_dir)
    x.progress.note("running the Preflight step first (the pipeline's first step)")
    job_dir.mkdir(parents=True, exist_ok=True)
    outcome = x.container(job, job_dir, run.store, x.process, lambda line: None)
    publish(job_dir, artifact_uris({PREFLIGHT_STEP: step})[PREFLIGHT_STEP], run.store)  # the Evaluate step reads it
    if outcome.exit_code != 0:
        failure = job_dir / "opt" / "ml" / "output" / "failure"
        why = failure.read_text().strip().splitlines()[0] if failure.exists() else f"exit {outcome.exit_code}"
        raise RunError(f"the Preflight step stopped the pipeline before any training job: {why} "
                       f"(see {job_dir / 'stdout.log'}; `bakeoff preflight` explains each problem)")
