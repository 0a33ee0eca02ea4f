"""What the verdict measured: checks that a parity verdict is about the target at all.

A pass is worth something only if every leg ran on its own backend, trained the same model,
and was not slowed by what the target does badly. The checks read what each job's summary.json
records: `model` (the parameters' devices, counts and shapes), `evidence` (what ran on the
device, training/evidence.py: PyTorch/XLA's and CUDA's own counters, optimizer steps and
training forward passes, what torch.accelerator answered), `first_train_loss` and `compile`.

They are the kinds in the check registry (verdict/checks/) that have a `measured` section, one module
each: `backend:<leg>` (checks/backend.py), `same-model` (same_model.py), `same-computation:<leg>`
(same_computation.py), `seeds:<leg>` (seeds.py) and `blockers:<leg>` (blockers.py). This module
derives from the registry what the rest of bakeoff asks of them: their kinds, whether a check is one,
the checks themselves and evaluation.json's `measured` section.

Each has the statuses passed / failed / warning / unchecked (and `inconclusive` for an unshown
trn backend or seeds that were one run); `unchecked` says why it could not be made (an emulated GPU
leg has no GPU to show; a job that wrote no record), never in silence. Standard library only: it runs
in the Evaluate step.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bakeoff_runtime.verdict import checks as registry
from bakeoff_runtime.verdict.checks._summary import COMPLETED  # noqa: F401  (re-exported)
from bakeoff_runtime.verdict.checks.backend import (  # noqa: F401  (re-exported)
    ACCELERATOR_CAUSE,
    ACCELERATOR_FIX,
    backend_check,
)
from bakeoff_runtime.verdict.checks.blockers import (  # noqa: F401  (re-exported)
    PREFLIGHT_HINT,
    RECOMPILE_ALLOWANCE,
    SCRIPT_HINT,
    blockers_check,
)
from bakeoff_runtime.verdict.checks.same_computation import same_computation_check  # noqa: F401  (re-exported)
from bakeoff_runtime.verdict.checks.same_model import FIRST_LOSS_TOLERANCE, same_model_check  # noqa: F401
from bakeoff_runtime.verdict.checks.seeds import TRAINING_EVIDENCE, seeds_check  # noqa: F401  (re-exported)

# The kinds of check this module stands for: the prefix of each check's name ("backend:trn1"), as the registry
# lists them when imported (is_validity_check reads the registry itself).
KINDS = tuple(k.name for k in registry.measured_kinds())


def is_validity_check(check: Mapping[str, Any]) -> bool:
    return registry.is_measured(check)


def checks(base: str, legs_cfg: dict, runs_by_leg: dict[str, list[dict]],
           metric: str = "val_loss") -> list[dict[str, Any]]:
    """The validity checks of a bake-off, in the order they are shown."""
    return registry.run(registry.Inputs(base=base, legs=legs_cfg, runs_by_leg=runs_by_leg, metric=metric),
                        registry.measured_kinds())


def section(validity: list[dict[str, Any]]) -> dict[str, Any]:
    """evaluation.json's `measured`: each check's status and why, by kind."""
    return registry.measured(validity)
