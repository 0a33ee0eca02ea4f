"""The Collective-<leg> steps (`legs[].collective_check`): all-reduce and all-gather on the leg's
own instances before its training steps; the result reaches the leg's training jobs through the
`collective` channel, and the Evaluate step as one of its inputs.
"""
from __future__ import annotations

import json
import shlex
import socket
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bakeoff_runtime import contract
from pipelines.names import COLLECTIVE_STEP_PREFIX, collective_step, precompile_step
from pipelines.plan.model import Plan, PlannedJob

from . import training
from .request import TRAIN_COMMAND, Compilation, StepInputs, s3

if TYPE_CHECKING:
    from pipelines.local.run_state import LocalRun

KIND = "collective"
STEP_TYPES, IAM_ACTIONS, JOB_RESOURCES = training.STEP_TYPES, training.IAM_ACTIONS, training.JOB_RESOURCES
COLLECTIVE_MAX_RUNTIME_S = 1800
MAX_LOCAL_PROCESSES = 8


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
    Locally the failed leg is stopped and the others go on to a verdict that names why (run_local).
    It logs no training metrics, so no comparison sees it."""
    from pipelines.plan.bundle import COLLECTIVE_SCRIPT

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


# --- run locally ------------------------------------------------------------------------------
def run_local(run: LocalRun, node: str) -> None:
    """The leg's check (only when the leg has jobs left to run) on this CPU: the compiled request
    with gloo processes as many as the leg's world size, up to what the machine takes, at least 2
    (PyTorch/XLA's CPU device cannot run collectives across processes), meeting on a free local
    port. A leg whose check fails does not train: its jobs are recorded as failed with the check's
    reason (run.stopped), and the other legs go on."""
    from pipelines.local.artifacts import artifact_uris, publish
    from pipelines.local.definition import Context, resolve

    x, step, leg = run.executor, run.steps[node], node[len(COLLECTIVE_STEP_PREFIX):]
    if leg not in run.pending:
        return
    request = resolve(step["Arguments"], Context(run.params, "", ""))
    job_dir = x.out / "collective" / leg
    job_dir.mkdir(parents=True, exist_ok=True)
    for stale in ("opt/ml/model/collective.json", "opt/ml/output/failure"):
        (job_dir / stale).unlink(missing_ok=True)
    ENV = contract.ENV
    world = run.plan.leg(leg).batching.world_size
    n = local_processes(world)
    job = run.subs.training(node, request, job_dir)
    job = replace(job, environment={**job.environment, ENV["nproc_per_node"]: str(n),
                                    ENV["master_port"]: str(_free_port()),
                                    contract.COLLECTIVE_BACKEND_ENV: "gloo"})
    x.progress.note(f"leg {leg}: collective check (all-reduce, all-gather) with {n} gloo processes "
                    f"standing for its {world} devices")
    outcome = x.container(job, job_dir, run.store, x.process, lambda line: None)
    publish(job_dir, artifact_uris({node: step})[node], run.store)
    result = _result(job_dir)
    (job_dir / "collective.json").write_text(json.dumps({**result, "processes": n, "leg_world_size": world,
                                                         "exit_code": outcome.exit_code}, indent=2) + "\n")
    if outcome.exit_code == 0 and result.get("ok"):
        bus = (result.get("bandwidth") or {}).get("all_reduce", {}).get("busbw_GBps")
        x.progress.note(f"leg {leg}: collective check passed" +
                        (f" (all-reduce bus bandwidth {bus:.3g} GB/s, emulated)" if bus else ""))
        return
    reason = result.get("reason") or _failure(job_dir) or f"the check exited with code {outcome.exit_code}"
    run.stopped[leg] = f"collective check failed, so the leg did not train: {reason}"
    x.progress.note(f"leg {leg}: {run.stopped[leg]} (see {job_dir / 'stdout.log'})")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def local_processes(world_size: int) -> int:
    from pipelines.spec.derived import machine_processes

    return max(2, min(world_size, machine_processes(), MAX_LOCAL_PROCESSES))


def _result(job_dir: Path) -> dict[str, Any]:
    try:
        return dict(json.loads((job_dir / "opt" / "ml" / "model" / "collective.json").read_text()))
    except (FileNotFoundError, ValueError):
        return {}


def _failure(job_dir: Path) -> str | None:
    path = job_dir / "opt" / "ml" / "output" / "failure"
    return path.read_text().strip().splitlines()[0] if path.exists() and path.read_text().strip() else None
