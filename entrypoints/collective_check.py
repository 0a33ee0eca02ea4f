"""Collective check: before a leg trains, prove its all-reduce and all-gather are exact at the
leg's world size, and measure their bus bandwidth.

    torchrun --nproc_per_node=N collective_check.py [--out DIR] [--bytes B] [--iters K]
    python3 launch.py collective_check.py          # in the container: one process per device

Every rank contributes small integers whose sum is exact in float32, so any difference from
the expected result is a fault, not rounding. Bus bandwidth follows nccl-tests
(NVIDIA/nccl-tests doc/PERFORMANCE.md): algbw = bytes / time; all-reduce busbw = algbw x
2(n-1)/n; all-gather busbw = algbw x (n-1)/n with bytes the gathered total. It is compared
with the instance's published network figure (BAKEOFF_NETWORK_GBPS, from the catalog) only
when the job spans several instances: inside one instance the traffic stays on NeuronLink or
NVLink, which that figure does not describe.

Writes collective.json (rank 0) to --out, else SM_MODEL_DIR; exits 1 with the reason (also
in SageMaker's failure file) when a result is wrong. BAKEOFF_COLLECTIVE_FAULT_RANK=k makes
rank k contribute a wrong value: the planted fault the tests use to show a failure is caught.
Torch and bakeoff_runtime's backend table and contract only: it runs in the training image before
anything else of bakeoff's runtime is needed.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from bakeoff_runtime.contract import (
    COLLECTIVE_BACKEND_ENV,
    COLLECTIVE_BYTES_ENV,
    COLLECTIVE_FAULT_RANK_ENV,
    JobEnvironment,
)
from bakeoff_runtime.contract.backend_table import BACKENDS

FAULT_ENV = COLLECTIVE_FAULT_RANK_ENV
SCHEMA = "bakeoff.collective/1"


def backend_and_device(torch, local_rank: int) -> tuple[str, object, object]:
    """(process-group backend, device, sync function) for this leg's backend."""
    row = BACKENDS.get(JobEnvironment.from_environ().backend)
    wanted = os.environ.get(COLLECTIVE_BACKEND_ENV) or (row.collective_group if row else "gloo")
    if wanted == "xla":
        import torch_xla
        import torch_xla.core.xla_model as xm
        import torch_xla.distributed.xla_backend  # noqa: F401  (registers the "xla" backend)

        def sync():
            torch_xla.sync()
            xm.wait_device_ops()

        return "xla", torch_xla.device(), sync
    if wanted == "nccl":
        torch.cuda.set_device(local_rank)
        return "nccl", torch.device("cuda", local_rank), torch.cuda.synchronize
    return "gloo", torch.device("cpu"), lambda: None


def contribution(torch, rank: int, numel: int, device, fault: bool):
    """Rank r sends (r + 1) * (1 + i % 7): integers whose sums stay exact in float32."""
    base = 1 + torch.arange(numel, dtype=torch.int64) % 7
    values = (rank + 1) * base
    if fault:
        values = values + 1
    return values.to(torch.float32).to(device), base


def first_mismatch(torch, got, want) -> str | None:
    got = got.cpu()
    if torch.equal(got, want):
        return None
    index = int((got != want).nonzero()[0, 0])
    wrong = int((got != want).sum())
    return f"{wrong} of {want.numel()} elements wrong; element {index} is {got[index].item():g}, " \
           f"expected {want[index].item():g}"


def check_all_reduce(torch, dist, rank: int, world: int, numel: int, device, fault: bool, sync) -> str | None:
    tensor, base = contribution(torch, rank, numel, device, fault)
    dist.all_reduce(tensor)
    sync()
    want = (world * (world + 1) // 2 * base).to(torch.float32)
    why = first_mismatch(torch, tensor, want)
    return f"all_reduce (sum over {world} ranks): {why}" if why else None


def check_all_gather(torch, dist, rank: int, world: int, numel: int, device, fault: bool, sync) -> str | None:
    tensor, base = contribution(torch, rank, numel, device, fault)
    out = [torch.empty_like(tensor) for _ in range(world)]
    dist.all_gather(out, tensor)
    sync()
    for source, got in enumerate(out):
        why = first_mismatch(torch, got, ((source + 1) * base).to(torch.float32))
        if why:
            return f"all_gather (chunk from rank {source} of {world}): {why}"
    return None


def timed(torch, dist, op: str, world: int, numel: int, device, iters: int, sync) -> dict:
    tensor = torch.ones(numel, dtype=torch.float32, device=device)
    out = [torch.empty_like(tensor) for _ in range(world)]

    def once():
        if op == "all_reduce":
            dist.all_reduce(tensor)
        else:
            dist.all_gather(out, tensor)

    # Warm-up with the timed loop's own sequence (iters ops, one sync): on XLA the ops are traced lazily into
    # one graph up to the sync, and a graph is compiled the first time it is seen, then served from the
    # compilation cache (PyTorch/XLA overview, docs.pytorch.org/xla "Pytorch/XLA overview": "Compilation is
    # then cached by PyTorch XLA to be reused later"), so a shorter warm-up left the timed loop's graph to be
    # compiled inside the timed window and the trn bus bandwidth understated. Connection set-up stays out too.
    for _ in range(iters):
        once()
    sync()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        once()
    sync()
    seconds = (time.perf_counter() - start) / iters
    nbytes = numel * 4 * (world if op == "all_gather" else 1)
    algbw = nbytes / seconds / 1e9
    factor = 2 * (world - 1) / world if op == "all_reduce" else (world - 1) / world
    return {"bytes": nbytes, "time_s": seconds, "algbw_GBps": algbw, "busbw_GBps": algbw * factor}


def compare(results: dict, hosts: int, network_gbps: float | None, emulated: str | None) -> dict:
    busbw = results["all_reduce"]["busbw_GBps"]
    out: dict = {"network_gbps": network_gbps, "hosts": hosts, "busbw_gbps": busbw * 8}
    if emulated:
        out["note"] = f"emulated on {emulated}: says nothing about the instance's network"
    elif hosts < 2:
        out["note"] = ("one instance: the collectives ran over the device interconnect (NeuronLink/NVLink), "
                       "which the network figure does not describe")
    elif network_gbps:
        out["fraction_of_network"] = busbw * 8 / network_gbps
        out["note"] = (f"all-reduce bus bandwidth {busbw * 8:.4g} Gbps is {busbw * 8 / network_gbps:.0%} of the "
                       f"instance's published {network_gbps:g} Gbps")
    return out


def _contract():
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # bakeoff_runtime ships beside this script
    from bakeoff_runtime.contract import TrainingEnv

    return TrainingEnv.from_environ()


def output_dir(args) -> Path:
    """The job's model dir as the contract derives it: SageMaker sets no SM_MODEL_DIR in a container
    whose entrypoint bakeoff overrides (the training toolkit that would set it never runs), so the
    default is /opt/ml/model, whose contents become the step's model.tar.gz."""
    return Path(args.out) if args.out else _contract().model_dir


def write_failure(reason: str) -> None:
    """SageMaker shows /opt/ml/output/failure as the job's (and the step's) FailureReason."""
    env = _contract()
    # Outside a job (a developer running the check by hand) there is no tree to write into.
    if env.output_dir.parent.is_dir():
        env.write_failure(reason)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="all-reduce/all-gather exactness and bus bandwidth")
    parser.add_argument("--out", help="directory for collective.json (default SM_MODEL_DIR)")
    parser.add_argument("--bytes", type=int, default=int(os.environ.get(COLLECTIVE_BYTES_ENV, 1 << 24)),
                        help="bytes per rank in the timed all-reduce (default 16 MiB)")
    parser.add_argument("--iters", type=int, default=5, help="timed iterations per collective")
    args, _ = parser.parse_known_args(argv)  # SageMaker's hyperparameters may follow; they are not ours

    import torch
    import torch.distributed as dist

    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    hosts = max(1, world // max(1, int(os.environ.get("LOCAL_WORLD_SIZE", world))))
    fault_rank = os.environ.get(FAULT_ENV)
    fault = fault_rank is not None and fault_rank != "" and int(fault_rank) == rank
    result: dict = {"schema": SCHEMA, "world_size": world, "hosts": hosts, "ok": False,
                    "planted_fault_rank": int(fault_rank) if fault_rank else None}
    if world < 2:
        result.update(ok=True, skipped="one process: there is no collective to check")
        _write(args, rank, result)
        return 0
    backend, device, sync = backend_and_device(torch, local_rank)
    dist.init_process_group(backend)
    result["backend"] = backend
    try:
        problems = [p for p in (
            check_all_reduce(torch, dist, rank, world, 4096, device, fault, sync),
            check_all_gather(torch, dist, rank, world, 4096, device, fault, sync)) if p]
        if problems:
            reason = f"collective check failed on rank {rank}: " + "; ".join(problems)
            result["reason"] = reason
            print(f"[bakeoff] {reason}", file=sys.stderr, flush=True)
            write_failure(reason)
            _write(args, rank, result)
            return 1
        numel = max(1, args.bytes // 4)
        bandwidth = {op: timed(torch, dist, op, world, numel if op == "all_reduce" else max(1, numel // world),
                               device, args.iters, sync)
                     for op in ("all_reduce", "all_gather")}
        job = JobEnvironment.from_environ()
        result.update(ok=True, bandwidth=bandwidth,
                      comparison=compare(bandwidth, hosts, float(job.network_gbps) if job.network_gbps else None,
                                         job.emulated_on or None))
        _write(args, rank, result)
        if rank == 0:
            print(f"[bakeoff] collective check passed at world size {world} ({backend}): all-reduce bus "
                  f"bandwidth {bandwidth['all_reduce']['busbw_GBps']:.3g} GB/s, all-gather "
                  f"{bandwidth['all_gather']['busbw_GBps']:.3g} GB/s", flush=True)
        return 0
    finally:
        dist.destroy_process_group()


def _write(args, rank: int, result: dict) -> None:
    if rank != 0:
        return
    out = output_dir(args)
    out.mkdir(parents=True, exist_ok=True)
    (out / "collective.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    sys.exit(main())
