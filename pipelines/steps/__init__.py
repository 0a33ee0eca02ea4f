"""The kinds of step a bakeoff pipeline has, one module each: how the compiler writes the step
(`compile_step`) and how a definition's step is known to be of the kind (`is_step`). How this machine
runs each kind is the local engine's (pipelines/local/kinds/, one module per kind beside these), so the
compiler, the validator and the CDK role never load the engine.

| kind | module | steps |
|---|---|---|
| preflight | preflight.py | `Preflight` (a trn leg's first job, a few steps, on a CPU instance) |
| collective | collective.py | `Collective-<leg>` (all-reduce and all-gather at the leg's world size) |
| precompile | precompile.py | `Precompile-<leg>` (neuron_parallel_compile; not run locally) |
| training | training.py | `Train-<leg>-s<seed>` (run locally as one batch, up to `--jobs` at once) |
| evaluate | evaluate.py | `Evaluate` (decides parity, writes evaluation.json) |
| gate | gate.py | `ParityGate` (and the Condition and Fail steps inside it) |

A new kind is one module with `KIND`, `is_step(step)`, `compile(c)` (appends its steps to the definition
being built and wires its own dependencies: request.Compilation), what it is in a definition (`STEP_TYPES`:
SageMaker step type -> the API operation the validator checks its arguments against, and the request's
name field) and what it needs of the pipeline's role (`IAM_ACTIONS`, on `JOB_RESOURCES`), added to KINDS
and, in definition order, to COMPILED; and its local half in pipelines/local/kinds/ (or a reason there why
it is not run locally). `request.py` holds what every kind's request is built from.
The compile halves import the plan, the spec and the definition's expressions, never the local engine,
which imports them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from . import collective, evaluate, gate, precompile, preflight, training

if TYPE_CHECKING:
    from .request import Compilation


class StepKind(Protocol):
    """What the compiler, the validator, the CDK policies and the local engine's dispatch need of a kind's module."""

    KIND: str
    STEP_TYPES: dict[str, tuple[str, str]]
    IAM_ACTIONS: tuple[str, ...]
    JOB_RESOURCES: tuple[str, ...]

    def is_step(self, step: dict[str, Any]) -> bool: ...

    def compile(self, c: Compilation) -> None: ...


# Asked in this order: the Preflight and Collective steps are Training steps too.
KINDS: dict[str, StepKind] = {m.KIND: m for m in (preflight, collective, precompile, training, evaluate, gate)}
# The compiler's order: each kind sees the steps the kinds before it made (Precompile, Collective and
# Preflight put theirs first and make the training steps wait; Evaluate reads them all; the gate is last).
COMPILED: tuple[StepKind, ...] = tuple(KINDS[k] for k in (training.KIND, precompile.KIND, collective.KIND,
                                                          preflight.KIND, evaluate.KIND, gate.KIND))


def operations() -> dict[str, tuple[str, str]]:
    """SageMaker step type -> (the API operation its Arguments are a request of, the request's name field)."""
    return {t: op for kind in KINDS.values() for t, op in kind.STEP_TYPES.items()}


def iam_actions() -> list[str]:
    """What the pipeline's role does with the kinds' jobs, in the kinds' order, each once."""
    return list(dict.fromkeys(a for kind in KINDS.values() for a in kind.IAM_ACTIONS))


def job_resources() -> list[str]:
    """The SageMaker resource types of the kinds' jobs (`training-job`, `processing-job`)."""
    return list(dict.fromkeys(r for kind in KINDS.values() for r in kind.JOB_RESOURCES))


def kind_of(step: dict[str, Any]) -> str | None:
    """Which kind a top-level step of a bakeoff definition is, or None for a step bakeoff never writes."""
    return next((kind for kind, module in KINDS.items() if module.is_step(step)), None)
