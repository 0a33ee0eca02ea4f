"""The kinds of step a bakeoff pipeline has, one module each: how the compiler writes the step
(`compile_step`) and how the local engine runs it (`run_local`), side by side, so a kind's two
halves cannot drift apart.

| kind | module | steps |
|---|---|---|
| preflight | preflight.py | `Preflight` (a trn leg's first job, a few steps, on a CPU instance) |
| collective | collective.py | `Collective-<leg>` (all-reduce and all-gather at the leg's world size) |
| precompile | precompile.py | `Precompile-<leg>` (neuron_parallel_compile; not run locally) |
| training | training.py | `Train-<leg>-s<seed>` (run locally as one batch, up to `--jobs` at once) |
| evaluate | evaluate.py | `Evaluate` (decides parity, writes evaluation.json) |
| gate | gate.py | `ParityGate` (and the Condition and Fail steps inside it) |

A new kind is one module with `KIND`, `is_step(step)`, a compile function the compiler calls and
`run_local(run, node)`, added to KINDS. `request.py` holds what every kind's request is built from.
The compile halves import the plan and the spec; the local halves import the local engine only
inside `run_local`, so the compiler never loads it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from . import collective, evaluate, gate, precompile, preflight, training

if TYPE_CHECKING:
    from pipelines.local.run_state import LocalRun


class StepKind(Protocol):
    """What the local engine and the registry need of a kind's module (its compile function's
    arguments differ by kind: the compiler calls each by name)."""

    KIND: str

    def is_step(self, step: dict[str, Any]) -> bool: ...

    def run_local(self, run: LocalRun, node: str) -> None: ...


# Asked in this order: the Preflight and Collective steps are Training steps too.
KINDS: dict[str, StepKind] = {m.KIND: m for m in (preflight, collective, precompile, training, evaluate, gate)}


def kind_of(step: dict[str, Any]) -> str | None:
    """Which kind a top-level step of a bakeoff definition is, or None for a step bakeoff never writes."""
    return next((kind for kind, module in KINDS.items() if module.is_step(step)), None)
