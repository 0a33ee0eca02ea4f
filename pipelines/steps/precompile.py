"""The Precompile-<leg> step (`legs[].precompile`): neuron_parallel_compile over the leg's own
launch, filling its compile cache before its training steps start.

Not run locally (pipelines/local/kinds: NOT_RUN_HERE says why); the local engine says so and goes on.
"""
from __future__ import annotations

import json
import shlex
from typing import Any

from bakeoff.pipelines.names import precompile_step
from bakeoff.pipelines.plan.model import Plan, PlannedJob
from bakeoff_runtime import contract

from . import training
from .request import TRAIN_COMMAND, Compilation, StepInputs, s3

KIND = "precompile"
STEP_TYPES, IAM_ACTIONS, JOB_RESOURCES = training.STEP_TYPES, training.IAM_ACTIONS, training.JOB_RESOURCES
PRECOMPILE_STEPS = 10


def is_step(step: dict[str, Any]) -> bool:
    return step.get("Type") == "Training" and str(step.get("Name")).startswith(precompile_step(""))


def compile_step(plan: Plan, job: PlannedJob, inputs: StepInputs) -> dict[str, Any]:
    """neuron_parallel_compile over the leg's exact launch (only the step count differs),
    writing to the same compile-cache location the leg's training jobs read."""
    step, _ = training.compile_step(plan, job, inputs)
    args = step["Arguments"]
    hps = {**args["HyperParameters"], "max_steps": str(PRECOMPILE_STEPS)}
    if int(json.loads(hps.get("eval_interval", "0"))) > 0:
        # Cross one evaluation inside the loop: the validation graphs, and the training graph
        # that follows them, are extracted too, not only the first steps'.
        hps["eval_interval"] = str(PRECOMPILE_STEPS // 2)
    args["HyperParameters"] = dict(sorted(hps.items()))
    command = TRAIN_COMMAND.format(script=shlex.quote(job.script)).replace(
        "exec python3 launch.py", "exec neuron_parallel_compile python3 launch.py")
    args["AlgorithmSpecification"]["ContainerEntrypoint"] = ["/bin/sh", "-c", command]
    precompile = contract.ENV["precompile"]
    args["Environment"] = dict(sorted({**args["Environment"], precompile: "1"}.items()))
    args["OutputDataConfig"] = {**args["OutputDataConfig"],
                                "S3OutputPath": s3(inputs.bucket, inputs.prefix, plan.spec.name, "precompile", job.leg)}
    args["Tags"] = [t for t in args["Tags"] if t["Key"] != "bakeoff:seed"] + [{"Key": "bakeoff:step",
                                                                                 "Value": "precompile"}]
    args.pop("CheckpointConfig", None)
    step["Name"] = precompile_step(job.leg)
    return step


def compile(c: Compilation) -> None:
    """A leg's Precompile step first in the definition; its training steps after it."""
    for leg in c.plan.spec.legs:
        if not leg.precompile:
            continue
        pre = compile_step(c.plan, c.plan.jobs_of(leg.name)[0], c.inputs)
        seeds = {j.step_name for j in c.plan.jobs_of(leg.name)}
        for step in c.steps:
            if step["Name"] in seeds:
                step.setdefault("DependsOn", []).append(pre["Name"])
        c.steps.insert(0, pre)
