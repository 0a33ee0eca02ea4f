"""The gate: the ParityGate Condition step on the Evaluate step's verdict (pass: the pipeline
succeeds), then VerdictIsFail, choosing between the ParityFailed and ParityInconclusive Fail steps,
whose messages name the failed or undecided checks. Locally the same conditions are walked.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pipelines.names import EVALUATE_STEP, FAIL_STEP, GATE_STEP, INCONCLUSIVE_STEP, PROPERTY_FILE, VERDICT_STEP
from pipelines.sagemaker.expressions import join, json_get
from pipelines.spec.model import BakeoffSpec

from .request import Compilation

if TYPE_CHECKING:
    from pipelines.local.definition import Context
    from pipelines.local.run_state import Engine, LocalRun

KIND = "gate"
# Condition and Fail steps start no job: the validator checks them by their structure, no IAM action.
STEP_TYPES: dict[str, tuple[str, str]] = {}
IAM_ACTIONS: tuple[str, ...] = ()
JOB_RESOURCES: tuple[str, ...] = ()


def is_step(step: dict[str, Any]) -> bool:
    return step.get("Type") == "Condition" and step.get("Name") == GATE_STEP


def compile_step(spec: BakeoffSpec) -> dict[str, Any]:
    verdict = json_get(EVALUATE_STEP, PROPERTY_FILE, "verdict")
    fail = {
        "Name": FAIL_STEP,
        "Type": "Fail",
        # The verdict's first line names the cause (a parity failure, a leg that did not train on its
        # backend, broken training), not "parity fails" for all of them.
        "Arguments": {"ErrorMessage": join(f"bake-off {spec.name}: ", json_get(EVALUATE_STEP, PROPERTY_FILE,
                                                                                "first_line"),
                                           " (exit code 1); failed checks: ",
                                           json_get(EVALUATE_STEP, PROPERTY_FILE, "failed_checks"))},
    }
    inconclusive = {
        "Name": INCONCLUSIVE_STEP,
        "Type": "Fail",
        "Arguments": {"ErrorMessage": join(f"bake-off {spec.name}: inconclusive (exit code 3); undecided checks: ",
                                           json_get(EVALUATE_STEP, PROPERTY_FILE, "undecided_checks"),
                                           "; to decide it: ",
                                           json_get(EVALUATE_STEP, PROPERTY_FILE, "to_decide"))},
    }
    which = {
        "Name": VERDICT_STEP,
        "Type": "Condition",
        "Arguments": {"Conditions": [{"Type": "Equals", "LeftValue": verdict, "RightValue": "fail"}],
                      "IfSteps": [fail], "ElseSteps": [inconclusive]},
    }
    return {
        "Name": GATE_STEP,
        "Type": "Condition",
        "Arguments": {
            "Conditions": [{"Type": "Equals", "LeftValue": verdict, "RightValue": "pass"}],
            "IfSteps": [],
            "ElseSteps": [which],
        },
    }


# --- run locally ------------------------------------------------------------------------------
def compile(c: Compilation) -> None:
    """The parity gate, last."""
    c.steps.append(compile_step(c.plan.spec))


def run_local(run: LocalRun, node: str) -> None:
    from pipelines.local.definition import walk_condition

    run.gate = take(run.executor, run.steps, node, run.ctx)
    # What the chosen branches hold besides the gate's own outcome (a team's step after a pass, say): the
    # engine runs each by the kind that claims it, as SageMaker would.
    run.branch = [(taken, step) for taken, step in walk_condition(run.steps[node], run.ctx)
                  if step["Type"] not in ("Fail", "Condition")]


def take(x: Engine, steps: dict[str, Any], name: str, ctx: Context) -> list[dict[str, str]]:
    """The Condition step: the path it takes through its If/Else steps (gate.json)."""
    from pipelines.local.definition import resolve, walk_condition
    from pipelines.local.files import write_json_atomically

    gate = [{"step": taken, "type": s["Type"], **({"message": str(resolve(s["Arguments"]["ErrorMessage"], ctx))}
                                                  if s["Type"] == "Fail" else {})}
            for taken, s in walk_condition(steps[name], ctx)]
    write_json_atomically(x.out / "evaluation" / "gate.json", gate)
    for taken_step in gate:
        if taken_step["type"] == "Fail":
            x.progress.note(f"gate: {taken_step['step']}: {taken_step['message']}")
    return gate
