"""bakeoff: decide by measurement whether a model should train on AWS Trainium or NVIDIA GPUs.

The package root is the Python API: the command line's verbs as functions (`bakeoff.pipelines.api`), the spec's
models, and the errors to branch on. Build a spec in Python the same way YAML does and run it here:

    from bakeoff.pipelines import BakeoffSpec, Leg, run_local
    spec = BakeoffSpec(name="demo", legs=[Leg(name="trn1", instance_type="ml.trn1.32xlarge"),
                                           Leg(name="p4d", instance_type="ml.p4d.24xlarge")])
    result = run_local(spec, "runs/demo")
    print(result.verdict)

or drive it on SageMaker from orchestration code:

    from bakeoff.pipelines import load_spec, synth, deploy, start, wait, report
    execution = start(deploy(load_spec("bakeoff.yaml"), role_arn=ROLE, bucket=BUCKET))
    wait(execution, poll_s=60)
    verdict = report(execution).verdict

Each verb returns a frozen pydantic model (`bakeoff.pipelines.api.results`) that serialises to the JSON
`bakeoff COMMAND --json` prints; nothing prints; errors are `bakeoff.pipelines.errors` classes with the CLI's
exit codes. `bakeoff.pipelines.advice.price_list` is the Price List module; the `prices` verb is
`bakeoff.pipelines.api.prices`.
"""
from __future__ import annotations

import sys
import types


def _version() -> str:
    # One place for the version: pyproject.toml, read back from the installed metadata.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bakeoff")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


__version__ = _version()

_API_VERBS = ("load_spec", "validate", "plan", "synth", "run_local", "preflight", "deploy", "start",
              "start_until_decided", "wait", "status", "retry", "report", "project", "stop", "instances", "images",
              "schema")
_API_TYPES = ("Validation", "LegPlan", "Synth", "AssetInfo", "RunSummary", "Deployment", "Execution",
              "ExecutionStatus", "StepStatus", "Report", "Instances", "Images", "Preflight", "ProgressEvent",
              "Decision", "Round", "Projection", "BudgetPlan", "Evaluation")
_ERRORS = ("BakeoffError", "SpecError", "AwsError", "RunError", "TimedOut", "Cancelled", "ParityError",
           "ParityFailed", "ParityInconclusive")

# Name -> the module defining it, relative to this package (imported by `importlib.import_module(.., __name__)`).
_EXPORTS = {
    **dict.fromkeys(("BakeoffSpec", "Leg", "Entrypoint", "ModelConfig", "Training", "Optimizer", "Parity", "Mlflow",
                     "Storage", "Data"), ".spec.model"),
    "spec_from_dict": ".spec.loader",
    "LocalExecutor": ".local", "RunResult": ".local",
    "build_plan": ".plan.model", "prepare_corpus": ".plan.corpus",
    **dict.fromkeys(_API_VERBS + _API_TYPES, ".api"),
    **dict.fromkeys(_ERRORS, ".errors"),
}

__all__ = sorted(_EXPORTS) + ["__version__"]

# The `plan` verb shares its name with a subpackage (pipelines/plan/). Importing a subpackage binds it on its
# package, which would replace the verb; this package keeps the verb instead. The subpackage's modules stay
# importable by their full names (`from bakeoff.pipelines.plan.model import ...`, `from bakeoff.pipelines.plan import
# bundle`).
_VERBS_OVER_SUBMODULES = frozenset({"plan"})


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value: object) -> None:
        if name in _VERBS_OVER_SUBMODULES and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> object:
    # Lazy: `bakeoff --help` must not pay for pydantic, boto3 or rich.
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
