"""The Collective-<leg> steps on this machine: the compiled request with gloo processes standing for
the leg's devices. A leg whose check fails does not train; the other legs go on to a verdict that
names why."""
from __future__ import annotations

import json
import socket
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bakeoff.pipelines.names import COLLECTIVE_STEP_PREFIX
from bakeoff.pipelines.spec.derived import machine_processes
from bakeoff.pipelines.steps import collective as compiled
from bakeoff_runtime import contract

from ..artifacts import artifact_uris, publish
from ..definition import Context, resolve

if TYPE_CHECKING:
    from ..run_state import LocalRun

KIND = compiled.KIND
MAX_LOCAL_PROCESSES = 8


def run_local(run: LocalRun, node: str) -> None:
    """The leg's check (only when the leg has jobs left to run) on this CPU: the compiled request
    with gloo processes as many as the leg's world size, up to what the machine takes, at least 2
    (PyTorch/XLA's CPU device cannot run collectives across processes), meeting on a free local
    port. A leg whose check fails does not train: its jobs are recorded as failed with the check's
    reason (run.stopped), and the other legs go on."""
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
    return max(2, min(world_size, machine_processes(), MAX_LOCAL_PROCESSES))


def _result(job_dir: Path) -> dict[str, Any]:
    try:
        return dict(json.loads((job_dir / "opt" / "ml" / "model" / "collective.json").read_text()))
    except (FileNotFoundError, ValueError):
        return {}


def _failure(job_dir: Path) -> str | None:
    path = job_dir / "opt" / "ml" / "output" / "failure"
    return path.read_text().strip().splitlines()[0] if path.exists() and path.read_text().strip() else None
