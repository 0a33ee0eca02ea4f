"""One local run of a definition, as its steps see it: what the engine prepared (the plan, the
steps, the jobs and their keys, the local store) and what the steps leave for the ones after them
(legs a collective check stopped, the jobs run and reused, the evaluation, the gate's path).
Handed to each step kind's `run_local` (pipelines/steps/)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bakeoff_runtime.contract.documents import Evaluation
    from pipelines.plan.model import Plan

    from .definition import Context
    from .executor import LocalExecutor
    from .store import LocalS3
    from .substitutions import LocalTrainingJob, Substitutions


@dataclass
class LocalRun:
    executor: LocalExecutor
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
