"""How this machine runs each kind of step of pipelines/steps/: one module per kind, its `run_local(run,
node)` reading and writing the run's state (run_state.LocalRun) and using the engine only through its
public protocol (run_state.Engine). The engine finds a step's kind with `bakeoff.pipelines.steps.kind_of` and runs
it by the module registered here; a kind the compiler writes but this machine cannot run is in
NOT_RUN_HERE with the reason, which the run prints where it would have run the step.

| kind | module | here |
|---|---|---|
| preflight | preflight.py | the compiled request, first; a blocker stops the run |
| collective | collective.py | gloo processes standing for the leg's devices; a failed check stops its leg |
| training | training.py | every training job as one batch (parallel.py), up to `--jobs` at once |
| evaluate | evaluate.py | the compiled request with this run directory's record; writes evaluation.json |
| gate | gate.py | the conditions walked (gate.json); what its taken branch holds goes back to the engine |

The kinds import the compile side (pipelines/steps/), which never imports them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from bakeoff.pipelines.steps import precompile as _precompile

from . import collective, evaluate, gate, preflight, training

if TYPE_CHECKING:
    from ..run_state import LocalRun


class LocalKind(Protocol):
    """What the engine needs of a kind's local module."""

    KIND: str

    def run_local(self, run: LocalRun, node: str) -> None: ...


LOCAL_KINDS: dict[str, LocalKind] = {m.KIND: m for m in (preflight, collective, training, evaluate, gate)}
NOT_RUN_HERE: dict[str, str] = {
    _precompile.KIND: "neuron_parallel_compile exists only in Neuron images, and PyTorch/XLA on CPU cannot load "
                      "cached executables",
}


def run_step(run: LocalRun, kind: str | None, name: str) -> bool:
    """Runs step `name` by its kind's local module, or says why its kind is not run here; False where no
    kind of this machine's claims it (the caller refuses it: never skipped unseen)."""
    if kind in NOT_RUN_HERE:
        run.executor.progress.note(f"{name}: not run on this machine ({NOT_RUN_HERE[kind]}); going on")
        return True
    local = LOCAL_KINDS.get(kind) if kind is not None else None
    if local is None:
        return False
    local.run_local(run, name)
    return True
