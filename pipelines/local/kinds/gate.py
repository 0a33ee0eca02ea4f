"""The parity gate on this machine: its conditions walked on the Evaluate step's property file. The
path taken is written to gate.json; what the chosen branches hold besides the gate's own outcome is
left in `run.branch` for the engine to run by kind."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bakeoff.pipelines.steps import gate as compiled

from ..definition import Context, resolve, walk_condition
from ..files import write_json_atomically

if TYPE_CHECKING:
    from ..run_state import Engine, LocalRun

KIND = compiled.KIND


def run_local(run: LocalRun, node: str) -> None:
    run.gate = take(run.executor, run.steps, node, run.ctx)
    # A team's step after a pass, say: the engine runs it by the kind that claims it, as SageMaker would. The
    # gate only names it, so that no kind needs the registry that holds it.
    run.branch = [(taken, step) for taken, step in walk_condition(run.steps[node], run.ctx)
                  if step["Type"] not in ("Fail", "Condition")]


def take(x: Engine, steps: dict[str, Any], name: str, ctx: Context) -> list[dict[str, str]]:
    """The Condition step: the path it takes through its If/Else steps (gate.json)."""
    gate = [{"step": taken, "type": s["Type"], **({"message": str(resolve(s["Arguments"]["ErrorMessage"], ctx))}
                                                  if s["Type"] == "Fail" else {})}
            for taken, s in walk_condition(steps[name], ctx)]
    write_json_atomically(x.out / "evaluation" / "gate.json", gate)
    for taken_step in gate:
        if taken_step["type"] == "Fail":
            x.progress.note(f"gate: {taken_step['step']}: {taken_step['message']}")
    return gate
