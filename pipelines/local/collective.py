"""The Collective-<leg> steps of a compiled pipeline, run on this machine before the legs' jobs.

The request is the compiled one; what differs here: the processes are gloo processes on this
CPU (as many as the leg's world size, up to what the machine takes, at least 2: PyTorch/XLA's
CPU device cannot run collectives across processes), and they meet on a free local port. A
leg whose check fails does not train: each of its jobs is recorded as failed with the check's
reason, and the other legs go on.
"""
from __future__ import annotations

import json
import socket
from dataclasses import replace
from pathlib import Path
from typing import Any

from bakeoff_runtime import contract, output_digest

MAX_LOCAL_PROCESSES = 8


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def artifact_uris(steps: dict[str, Any]) -> dict[str, str]:
    """Where the model.tar.gz of each step others read (Collective-<leg>, Preflight) lies in the
    local store: what Steps.<step>.ModelArtifacts.S3ModelArtifacts resolves to here (the
    training jobs' `collective` channel, the Evaluate step's `preflight` and `collective-<leg>`
    inputs)."""
    from pipelines.names import PREFLIGHT_STEP
    from pipelines.sagemaker.compiler import COLLECTIVE_STEP_PREFIX

    return {name: step["Arguments"]["OutputDataConfig"]["S3OutputPath"].rstrip("/") + "/local/output/model.tar.gz"
            for name, step in steps.items() if name.startswith(COLLECTIVE_STEP_PREFIX) or name == PREFLIGHT_STEP}


def publish(job_dir: Path, uri: str, store) -> None:
    """The check's model dir as SageMaker uploads it: model.tar.gz at the step's artifact URI."""
    import tarfile

    target = store.path(uri)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        for path in sorted((job_dir / "opt" / "ml" / "model").glob("*")):
            tar.add(path, arcname=path.name)
    tmp.replace(target)


def local_processes(world_size: int) -> int:
    from pipelines.spec.derived import machine_processes

    return max(2, min(world_size, machine_processes(), MAX_LOCAL_PROCESSES))


def run_checks(executor, steps: dict[str, Any], subs, store, params, plan, pending_legs: set[str]) -> dict[str, str]:
    """Run each leg's check (legs with jobs left to run only); leg -> reason where it failed."""
    from pipelines.sagemaker.compiler import COLLECTIVE_STEP_PREFIX

    from .definition import Context, resolve

    ENV = contract.ENV
    stopped: dict[str, str] = {}
    for name, step in steps.items():
        leg = name[len(COLLECTIVE_STEP_PREFIX):] if name.startswith(COLLECTIVE_STEP_PREFIX) else None
        if leg is None or leg not in pending_legs:
            continue
        request = resolve(step["Arguments"], Context(params, "", ""))
        job_dir = executor.out / "collective" / leg
        job_dir.mkdir(parents=True, exist_ok=True)
        for stale in ("opt/ml/model/collective.json", "opt/ml/output/failure"):
            (job_dir / stale).unlink(missing_ok=True)
        job = subs.training(name, request, job_dir)
        world = plan.leg(leg).batching.world_size
        n = local_processes(world)
        job = replace(job, environment={**job.environment, ENV["nproc_per_node"]: str(n),
                                        ENV["master_port"]: str(_free_port()),
                                        "BAKEOFF_COLLECTIVE_BACKEND": "gloo"})
        executor.progress.note(f"leg {leg}: collective check (all-reduce, all-gather) with {n} gloo processes "
                               f"standing for its {world} devices")
        outcome = executor.container(job, job_dir, store, executor._process, lambda line: None)
        publish(job_dir, artifact_uris(steps)[name], store)
        result = _result(job_dir)
        (job_dir / "collective.json").write_text(json.dumps({**result, "processes": n, "leg_world_size": world,
                                                             "exit_code": outcome.exit_code}, indent=2) + "\n")
        if outcome.exit_code == 0 and result.get("ok"):
            bus = (result.get("bandwidth") or {}).get("all_reduce", {}).get("busbw_GBps")
            executor.progress.note(f"leg {leg}: collective check passed" +
                                   (f" (all-reduce bus bandwidth {bus:.3g} GB/s, emulated)" if bus else ""))
            continue
        reason = result.get("reason") or _failure(job_dir) or f"the check exited with code {outcome.exit_code}"
        stopped[leg] = f"collective check failed, so the leg did not train: {reason}"
        executor.progress.note(f"leg {leg}: {stopped[leg]} (see {job_dir / 'stdout.log'})")
    return stopped


def _result(job_dir: Path) -> dict[str, Any]:
    try:
        return dict(json.loads((job_dir / "opt" / "ml" / "model" / "collective.json").read_text()))
    except (FileNotFoundError, ValueError):
        return {}


def _failure(job_dir: Path) -> str | None:
    path = job_dir / "opt" / "ml" / "output" / "failure"
    return path.read_text().strip().splitlines()[0] if path.exists() and path.read_text().strip() else None


def record_stopped(executor, job, key: str, reason: str, store, kind: str = "collective") -> str:
    """A job of a stopped leg, recorded as the platform would a job that failed at once."""
    from .jobs import Outcome

    job_dir = executor.out / "jobs" / job.name
    model = job_dir / "opt" / "ml" / "model"
    model.mkdir(parents=True, exist_ok=True)
    (job_dir / "job.json").unlink(missing_ok=True)
    summary = {"schema": "bakeoff.summary/1", "status": "failed", "reason": reason[:500],
               "failure_kind": kind, "leg": job.leg, "seed": job.seed,
               "backend": job.environment.get(contract.ENV["backend"]), "job_key": key}
    (model / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    data = job_dir / "opt" / "ml" / "output" / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    for directory in (model, data):  # as a job does: the Evaluate step checks it
        output_digest.record(directory)
    executor._record(job, job_dir, key, 0.0, Outcome(1, 0.0), store)
    return str(json.loads((job_dir / "job.json").read_text())["training_job_name"])

