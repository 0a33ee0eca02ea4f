"""The names a bake-off gives things, in one place: pipeline, steps, jobs. The spec checks
them against SageMaker's patterns, the compiler writes them, the local executor and the
AWS operations read them back."""
from __future__ import annotations

import re
from typing import Any

from bakeoff_runtime import contract

STEP_NAME_RE = re.compile(r"^[A-Za-z0-9\-_]{1,64}$")
EVALUATE_STEP = "Evaluate"
GATE_STEP = "ParityGate"
VERDICT_STEP = "VerdictIsFail"
FAIL_STEP = "ParityFailed"
INCONCLUSIVE_STEP = "ParityInconclusive"
PREFLIGHT_STEP = "Preflight"
PROPERTY_FILE = "EvaluationReport"


def pipeline_name(bakeoff: str) -> str:
    return f"bakeoff-{bakeoff}"


def step_name(leg: str, seed: int) -> str:
    """The pipeline step of a leg x seed (named in the contract: the Evaluate step reads it too)."""
    return str(contract.training_step_name(leg, seed))


def precompile_step(leg: str) -> str:
    return f"Precompile-{leg}"


COLLECTIVE_STEP_PREFIX = "Collective-"  # as long as "Precompile-": leg names are checked to fit it


def collective_step(leg: str) -> str:
    """A leg's collective check (legs[].collective_check)."""
    return f"{COLLECTIVE_STEP_PREFIX}{leg}"


def parse_step_name(name: str) -> tuple[str, int] | None:
    """(leg, seed) of a training step's name, or None for any other step."""
    return contract.parse_training_step_name(name)


def job_name(leg: str, seed: int) -> str:
    """A job's directory locally and under the pipeline's prefix, and its MLflow run name."""
    return str(contract.job_name(leg, seed))


def definition_training_steps(definition: dict[str, Any]) -> list[tuple[str, int, dict[str, Any]]]:
    """(name, seed, step) of each leg x seed training step of a compiled pipeline definition, in its order.
    Training steps without a seed (a leg's Precompile, the Preflight) are left out."""
    found = []
    for step in definition.get("Steps") or []:
        name = str(step.get("Name", ""))
        named = parse_step_name(name)
        if step.get("Type") == "Training" and named is not None:
            found.append((name, named[1], step))
    return found
