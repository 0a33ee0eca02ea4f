"""bakeoff: decide by measurement whether a model should train on AWS Trainium or NVIDIA GPUs.

The installed distribution's one import name. The Python API is here:

    from bakeoff import load_spec, run_local, synth, deploy, start, wait, report

and the packages under it are `bakeoff.pipelines` (spec, compiler, local engine, command line; its root
exports this same API, documented there) and `bakeoff.estimators` (each kind of leg). Importing this
package loads nothing heavy: a name is imported the first time it is used, as `bakeoff --help` requires.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from bakeoff import pipelines as _api

if TYPE_CHECKING:  # what type checkers and editors see; at run time each name resolves lazily below
    from bakeoff.pipelines.api import (
        AssetInfo,
        BudgetPlan,
        Decision,
        Deployment,
        Evaluation,
        Execution,
        ExecutionStatus,
        Images,
        Instances,
        LegPlan,
        Preflight,
        ProgressEvent,
        Projection,
        Report,
        Round,
        RunSummary,
        StepStatus,
        Synth,
        Validation,
        deploy,
        images,
        instances,
        load_spec,
        plan,
        preflight,
        project,
        report,
        retry,
        run_local,
        schema,
        start,
        start_until_decided,
        status,
        stop,
        synth,
        validate,
        wait,
    )
    from bakeoff.pipelines.errors import (
        AwsError,
        BakeoffError,
        Cancelled,
        ParityError,
        ParityFailed,
        ParityInconclusive,
        RunError,
        SpecError,
        TimedOut,
    )
    from bakeoff.pipelines.local import LocalExecutor, RunResult
    from bakeoff.pipelines.plan.corpus import prepare_corpus
    from bakeoff.pipelines.plan.model import build_plan
    from bakeoff.pipelines.spec.loader import spec_from_dict
    from bakeoff.pipelines.spec.model import (
        BakeoffSpec,
        Data,
        Entrypoint,
        Leg,
        Mlflow,
        ModelConfig,
        Optimizer,
        Parity,
        Storage,
        Training,
    )

__version__: str = _api.__version__
__all__ = list(_api.__all__)


def __getattr__(name: str) -> object:
    # The export table is bakeoff.pipelines' own: one list of the public API.
    if name in _api._EXPORTS:
        return getattr(_api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_api._EXPORTS))
