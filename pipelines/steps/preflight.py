"""The Preflight step (`preflight.enabled`, and what `bakeoff preflight` runs): a trn leg's first
job, a few steps long, on a CPU instance with the preflight probes on. It fails, stopping the
pipeline before any training job, when it finds a blocker; its findings reach the Evaluate step
as one of its inputs.
"""
from __future__ import annotations

from typing import Any

from bakeoff.pipelines.names import PREFLIGHT_STEP
from bakeoff.pipelines.plan.model import Plan, derive_batching
from bakeoff_runtime import contract
from bakeoff_runtime.contract.backend_table import PREFLIGHT_BACKEND

from . import training
from .request import Compilation, StepInputs, apply_security, s3

KIND = "preflight"
STEP_TYPES, IAM_ACTIONS, JOB_RESOURCES = training.STEP_TYPES, training.IAM_ACTIONS, training.JOB_RESOURCES


def is_step(step: dict[str, Any]) -> bool:
    return step.get("Type") == "Training" and step.get("Name") == PREFLIGHT_STEP


def compile_step(plan: Plan, inputs: StepInputs, leg: str | None = None, steps: int | None = None) -> dict[str, Any]:
    """A trn leg's first job, a few steps long, on a CPU instance with the preflight probes on:
    it fails (stopping the pipeline) when it finds a blocker. `bakeoff preflight` runs this
    same request locally."""
    spec = plan.spec
    name = leg or next((lg.name for lg in spec.legs if lg.backend == PREFLIGHT_BACKEND), spec.legs[0].name)
    job = plan.jobs_of(name)[0]
    ENV = contract.ENV
    step, _ = training.compile_step(plan, job, inputs)
    args = step["Arguments"]
    hps = dict(args["HyperParameters"])
    hps.update(max_steps=str(steps or spec.preflight.steps), log_interval="1", eval_interval="0",
               checkpoint_interval="0", warmup_exclude_steps="1")
    # One process on a CPU instance: the leg's global batch split for one process, not for the leg's
    # devices (its per-device share would not add up to the global batch, and the job would refuse it).
    one = derive_batching(int(job.hyperparameters["global_batch_size"]), 1, spec.training.max_per_device_batch_size)
    hps.update(per_device_batch_size=str(one.per_device_batch_size),
               gradient_accumulation_steps=str(one.gradient_accumulation_steps))
    args["HyperParameters"] = dict(sorted(hps.items()))
    env = {k: v for k, v in args["Environment"].items() if not k.startswith(("NEURON_", "FI_", "RDMAV_"))}
    env.update({"PJRT_DEVICE": "CPU", ENV["backend"]: PREFLIGHT_BACKEND, ENV["preflight"]: "1",
                ENV["preflight_fail_on_blocker"]: "1", ENV["nproc_per_node"]: "1"})
    # A preflight that crashes has found something too: it fails the step, so no trn job starts
    # (the training steps' continue-on-failure is for the Evaluate step, which this step is not).
    env.pop(ENV["continue_on_failure"], None)
    args["Environment"] = dict(sorted(env.items()))
    args["ResourceConfig"] = {"InstanceType": spec.preflight.instance_type, "InstanceCount": 1, "VolumeSizeInGB": 50}
    args["StoppingCondition"] = {"MaxRuntimeInSeconds": 3600}
    args["OutputDataConfig"] = {"S3OutputPath": s3(inputs.bucket, inputs.prefix, spec.name, "preflight", name)}
    args.pop("VpcConfig", None)
    apply_security(args, spec, [spec.preflight.instance_type])
    args.pop("CheckpointConfig", None)
    args.pop("EnableManagedSpotTraining", None)
    args["Tags"] = [t for t in args["Tags"] if t["Key"] not in ("bakeoff:seed", "bakeoff:compile-cache")]
    args["Tags"].append({"Key": "bakeoff:step", "Value": "preflight"})
    step["Name"] = PREFLIGHT_STEP
    step.pop("RetryPolicies", None)
    return step


def compile(c: Compilation) -> None:
    """The Preflight step first, every other step so far after it: where the spec enables it, or
    `bakeoff preflight` asks for it (`c.preflight`: its leg and steps)."""
    if not (c.plan.spec.preflight.enabled or c.preflight):
        return
    first = compile_step(c.plan, c.inputs, *(c.preflight or ()))
    for step in c.steps:
        step["DependsOn"] = sorted({*step.get("DependsOn", []), PREFLIGHT_STEP})
    c.steps.insert(0, first)
