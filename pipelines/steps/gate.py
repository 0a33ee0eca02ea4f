"""The gate: the ParityGate Condition step on the Evaluate step's verdict (pass: the pipeline
succeeds), then VerdictIsFail, choosing between the ParityFailed and ParityInconclusive Fail steps,
whose messages name the failed or undecided checks. Locally the same conditions are walked
(pipelines/local/kinds/gate.py).
"""
from __future__ import annotations

from typing import Any

from bakeoff.pipelines.names import EVALUATE_STEP, FAIL_STEP, GATE_STEP, INCONCLUSIVE_STEP, PROPERTY_FILE, VERDICT_STEP
from bakeoff.pipelines.sagemaker.expressions import join, json_get
from bakeoff.pipelines.spec.model import BakeoffSpec

from .request import Compilation

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


def compile(c: Compilation) -> None:
    """The parity gate, last."""
    c.steps.append(compile_step(c.plan.spec))
