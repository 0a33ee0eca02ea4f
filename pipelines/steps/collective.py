"""The Collective-<leg> steps (`legs[].collective_check`): all-reduce and all-gather on the leg's
own instances before its training steps; the result reaches the leg's training jobs through the
`collective` channel, and the Evaluate step as one of its inputs.
"""
from __future__ import annotations

import shlex
from typing import Any

from bakeoff.pipelines.names import COLLECTIVE_STEP_PREFIX, collective_step, precompile_step
from bakeoff.pipelines.plan.model import Plan, PlannedJob
from bakeoff_runtime import contract

from . import training
from .request import TRAIN_COMMAND, Compilation, StepInputs, s3

KIND = "collective"
STEP_TYPES, IAM_ACTIONS, JOB_RESOURCES = training.STEP_TYPES, training.IAM_ACTIONS, training.JOB_RESOURCES
COLLECTIVE_MAX_RUNTIME_S = 1800


def is_step(step: dict[str, Any]) -> bool:
    return step.get("Type") == "Training" and str(step.get("Name")).startswith(COLLECTIVE_STEP_PREFIX)


def compile_step(plan: Plan, job: PlannedJob, inputs: StepInputs) -> dict[str, Any]:
    """legs[].collective_check: all-reduce and all-gather on the leg's own instances, one process
    per device as launch.py starts them for training (so at the leg's world size), before its
    training steps. A wrong result, or any error before one, fails the step (launch.py exits non-zero for
    it whatever BAKEOFF_CONTINUE_ON_FAILURE says): SageMaker's step cache serves only successful steps, so
    a check that failed is run again once the network is fixed (`bakeoff retry`), never served for 30 days.
    The execution then ends Failed, with the check's reason as the step's FailureReason, and no verdict:
    instances that cannot train together measure nothing. (SageMaker's run conditions, which would let
    Evaluate run after a failed step, are in the SDK's serialiser only, not in AWS's documentation or the
    published definition schema.) collective.json in its model artifacts reaches the leg's training jobs
    through the `collective` channel; a job that finds no result, or a failed one, exits non-zero too.
    Locally the failed leg is stopped and the others go on to a verdict that names why
    (pipelines/local/kinds/collective.py).
    It logs no training metrics, so no comparison sees it."""
    from bakeoff.pipelines.plan.bundle import COLLECTIVE_SCRIPT

    step, _ = training.compile_step(plan, job, inputs)
    args = step["Arguments"]
    leg = plan.spec.leg(job.leg)
    ENV = contract.ENV
    # No MLflow: the check logs no run (and must not spend its minutes installing a client).
    dropped = {ENV["mlflow_install"], ENV["mlflow_experiment"], "MLFLOW_TRACKING_URI"}
    env = {k: v for k, v in args["Environment"].items() if k not in dropped}
    if leg.instance.network_gbps:
        env[ENV["network_gbps"]] = str(leg.instance.network_gbps)
    args["Environment"] = dict(sorted(env.items()))
    args["AlgorithmSpecification"] = {
        "TrainingImage": args["AlgorithmSpecification"]["TrainingImage"], "TrainingInputMode": "File",
        "ContainerEntrypoint": ["/bin/sh", "-c", TRAIN_COMMAND.format(script=shlex.quote(COLLECTIVE_SCRIPT))]}
    args["StoppingCondition"] = {"MaxRuntimeInSeconds": min(COLLECTIVE_MAX_RUNTIME_S, leg.max_runtime_s)}
    args["OutputDataConfig"] = {**args["OutputDataConfig"],
                                "S3OutputPath": s3(inputs.bucket, inputs.prefix, plan.spec.name, "collective", job.leg)}
    args["Tags"] = [t for t in args["Tags"] if t["Key"] not in ("bakeoff:seed", "bakeoff:compile-cache")] + [
        {"Key": "bakeoff:step", "Value": "collective"}]
    args.pop("CheckpointConfig", None)
    args.pop("EnableManagedSpotTraining", None)  # a few minutes: not worth an interruption
    step["Name"] = collective_step(job.leg)
    return step


def channel(check_step: str) -> dict[str, Any]:
    """The channel that hands a Collective step's model.tar.gz to the leg's training jobs."""
    return {"ChannelName": contract.COLLECTIVE_CHANNEL,
            "DataSource": {"S3DataSource": {
                "S3DataType": "S3Prefix", "S3Uri": {"Get": f"Steps.{check_step}.ModelArtifacts.S3ModelArtifacts"},
                "S3DataDistributionType": "FullyReplicated"}},
            "InputMode": "File"}


def add_steps(plan: Plan, train_steps: list[dict[str, Any]], inputs: StepInputs) -> None:
    """One check per leg that asks for it (every size of a sweep is a leg), where the job has
    more than one process: the leg's training and precompile steps depend on it."""
    for leg in plan.spec.legs:
        if not getattr(leg, "collective_check", False) or plan.leg(leg.name).batching.world_size < 2:
            continue
        check = compile_step(plan, plan.jobs_of(leg.name)[0], inputs)
        seeds = {j.step_name for j in plan.jobs_of(leg.name)}
        for step in train_steps:
            if step["Name"] in seeds | {precompile_step(leg.name)}:
                step["DependsOn"] = sorted({*step.get("DependsOn", []), check["Name"]})
            if step["Name"] in seeds:  # the result travels as a channel: see compile_step
                step["Arguments"]["InputDataConfig"].append(channel(check["Name"]))
        train_steps.insert(0, check)


def compile(c: Compilation) -> None:
    add_steps(c.plan, c.steps, c.inputs)
