"""One local run of a definition, as its steps see it: what the engine prepared (the plan, the
steps, the jobs and their keys, the local store) and what the steps leave for the ones after them
(legs a collective check stopped, the jobs run and reused, the evaluation, the gate's path).
Handed to each step kind's `run_local` (pipelines/local/kinds/), with the engine as `Engine`: what a kind
may read and set of it, by public name only, so that the executor's insides can change under the kinds."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from bakeoff.pipelines.plan.model import Plan
    from bakeoff.pipelines.spec.model import BakeoffSpec
    from bakeoff_runtime.contract.documents import Attempt, Evaluation

    from .definition import Context
    from .jobs import JobContainer, JobProcess, Outcome, ProcessingRunner
    from .parallel import ParallelJobs
    from .progress import Progress
    from .run_rule import Rule
    from .store import LocalS3
    from .substitutions import LocalTrainingJob, Substitutions


class Engine(Protocol):
    """The local engine as the step kinds (and the training jobs' runner) see it (executor.LocalExecutor)."""

    spec: BakeoffSpec
    out: Path                      # the run directory
    progress: Progress             # the display (or the API's event adaptor)
    use_gpu: bool
    python: str                    # the interpreter the jobs run in
    jobs: int                      # training jobs at once
    sequential: dict[str, Any] | None  # a round of `--until-decided`: its looks
    look: int                      # which look at this directory's data the decision is
    rule_change: str | None        # why the rule changed after the data, where it did
    plan: Plan | None
    container: JobContainer        # how a training request's container is run
    processor: ProcessingRunner    # how the Evaluate step's request is run
    process: JobProcess            # the one-at-a-time steps' process
    parallel: ParallelJobs | None  # the training jobs' runner while they run (the signal handler stops it)

    @property
    def rule(self) -> Rule: ...

    @property
    def attempt(self) -> Attempt | None: ...

    def verify_outputs(self) -> None: ...

    def train(self, job: LocalTrainingJob, key: str, store: LocalS3, process: JobProcess, on_line: Any,
              interrupted: Any = ...) -> dict[str, Any]: ...

    def record_job(self, job: LocalTrainingJob, job_dir: Path, key: str, started: float, outcome: Outcome,
                   store: LocalS3) -> dict: ...

    def stop_if_nobody_reports_the_metric(self, job_dirs: list[Path]) -> None: ...


@dataclass
class LocalRun:
    executor: Engine
    plan: Plan
    definition: dict[str, Any]
    steps: dict[str, dict[str, Any]]       # step name -> the compiled step
    subs: Substitutions
    store: LocalS3
    params: dict[str, Any]                 # the pipeline parameters' values
    ctx: Context                           # what property references resolve to
    order: list[str]                       # the training steps, seed-major
    jobs: dict[str, LocalTrainingJob]      # training step -> its job as run here
    keys: dict[str, str]                   # training step -> its job cache key
    reuse: set[str]                        # training steps whose finished job is reused
    pending: set[str]                      # legs with jobs left to run
    rule_original: dict[str, Any] | None   # the rule fixed before the data, when this run changed it
    stopped: dict[str, str] = field(default_factory=dict)  # leg -> why it does not train
    executed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    evaluation: Evaluation | None = None
    evaluation_path: Path | None = None
    gate: list[dict[str, str]] = field(default_factory=list)
    branch: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # a condition's taken steps, to run
