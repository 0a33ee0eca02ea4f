"""The gate's outcome as a notification: EventBridge rules on SageMaker's own pipeline events, one per outcome,
to an SNS topic (a text message) or any EventBridge target (the event itself).

SageMaker sends "SageMaker Model Building Pipeline Execution Status Change" and "... Execution Step Status
Change" events (source aws.sagemaker) to the default bus; a step event whose `currentStepStatus` is Failed
carries `failureReason` (docs.aws.amazon.com/sagemaker/latest/dg/automating-sagemaker-with-eventbridge.html).
The verdict lives in the steps, not the execution: a pass is the execution Succeeded (only a pass gets past
ParityGate), a fail or an inconclusive verdict is its Fail step (ParityFailed, ParityInconclusive) failing
with the gate's message as the step's failure reason, and the execution's own FailureReason says only that a
step failed. Any other failed step means the execution will end without a verdict (a seed lost to the
platform, a failed collective check): `bakeoff retry` runs it again. SageMaker may send an event more than
once per change (the same page), so a message may repeat.

Pipeline ARNs carry the pipeline's name in lower case; the patterns compare it ignoring case
(`equals-ignore-case`, docs.aws.amazon.com/eventbridge/latest/userguide/eb-create-pattern-operators.html).
"""
from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_sns as sns
from constructs import Construct

from bakeoff.pipelines.names import FAIL_STEP, INCONCLUSIVE_STEP

SOURCE = "aws.sagemaker"
EXECUTION_EVENT = "SageMaker Model Building Pipeline Execution Status Change"
STEP_EVENT = "SageMaker Model Building Pipeline Execution Step Status Change"


@dataclass(frozen=True)
class Outcome:
    """One kind of message: the rule's construct id, its event pattern's detail type and detail, and the text."""

    name: str
    detail_type: str
    detail: dict
    text: str


def outcomes(pipeline_arn: str) -> list[Outcome]:
    arn = [{"equals-ignore-case": pipeline_arn}]
    execution = events.EventField.from_path("$.detail.pipelineExecutionArn")
    label = events.EventField.from_path("$.detail.pipelineExecutionDisplayName")
    reason = events.EventField.from_path("$.detail.failureReason")
    step = events.EventField.from_path("$.detail.stepName")
    report = f"Report: bakeoff report {execution}"
    return [
        Outcome("Pass", EXECUTION_EVENT, {"pipelineArn": arn, "currentPipelineExecutionStatus": ["Succeeded"]},
                f"bakeoff verdict: pass. Execution {label} ({execution}) succeeded. {report}"),
        Outcome("Fail", STEP_EVENT, {"pipelineArn": arn, "stepName": [FAIL_STEP], "currentStepStatus": ["Failed"]},
                f"bakeoff verdict: fail. {reason} Execution {execution}. {report}"),
        Outcome("Inconclusive", STEP_EVENT,
                {"pipelineArn": arn, "stepName": [INCONCLUSIVE_STEP], "currentStepStatus": ["Failed"]},
                f"bakeoff verdict: inconclusive. {reason} Execution {execution}. {report}"),
        Outcome("NoVerdict", STEP_EVENT,
                {"pipelineArn": arn, "stepName": [{"anything-but": [FAIL_STEP, INCONCLUSIVE_STEP]}],
                 "currentStepStatus": ["Failed"]},
                f"bakeoff: step {step} failed, so execution {execution} will end without a verdict: {reason} "
                f"(bakeoff status {execution}; bakeoff retry {execution} runs what failed again)"),
    ]


def add_rules(scope: Construct, pipeline_arn: str, description: str,
              target: sns.ITopic | events.IRuleTarget) -> list[events.Rule]:
    """One rule per outcome to `target`: a topic gets the outcome's text, another target the event."""
    rules = []
    for outcome in outcomes(pipeline_arn):
        rule = events.Rule(scope, f"Notify{outcome.name}", description=f"{description}: {outcome.name.lower()}",
                           event_pattern=events.EventPattern(source=[SOURCE], detail_type=[outcome.detail_type],
                                                             detail=outcome.detail))
        if hasattr(target, "topic_arn"):  # a topic (jsii interfaces are not runtime-checkable protocols)
            rule.add_target(targets.SnsTopic(target, message=events.RuleTargetInput.from_text(outcome.text)))
        else:
            rule.add_target(target)  # type: ignore[arg-type]
        rules.append(rule)
    return rules
