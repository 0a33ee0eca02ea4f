"""How many local jobs run at once, and how many threads each gets.

A training job on this machine is one or more Python processes that spend their first
seconds importing (one core) and then train with as many intra-op threads as torch sees
cores. Two jobs that each take every core fight over them; two jobs that each take half
share them. So the default is as many jobs as there are cores, capped by the memory a job
needs, and each job's torch gets its share of the cores (OMP_NUM_THREADS, which torch's
intra-op pool reads at start-up). The cache key of a job never includes these: running
the same jobs with another `--jobs` is not a reason to run them again.
"""
from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from pathlib import Path

from bakeoff_runtime.contract import ENV, THREAD_ENV

# What one local job may hold at its peak: the quickstart's trn1 job (torch + torch_xla on
# PJRT's CPU device) peaked at about 1.1 GiB of host memory in its summary.json
# (`memory.peak_host_bytes`), and its MLflow client process (bakeoff_runtime.tracking.sink) holds
# about 0.2 GiB beside it; 2 GiB leaves room for larger example models and the page cache the
# imports need.
JOB_MEMORY_BYTES = 2 * 1024**3
# Past this, more jobs at once only add contention on a shared disk and the MLflow store.
MAX_DEFAULT_JOBS = 8
# What each leg's warm interpreter holds beside its jobs while the batch runs (pipelines/local/warm.py):
# torch (and torch_xla for an emulated trn leg) imported, no device touched; about 0.5-0.6 GiB of RSS
# for the quickstart's trn1 leg (ps, stop 35), so 0.6 GiB a leg.
WARM_INTERPRETER_BYTES = 614 * 1024**2


def machine_cores() -> int:
    """Cores this process may use: its CPU affinity, then a cgroup v2 quota if one is set."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            cores = min(cores, max(1, int(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(1, cores)


def available_memory_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def default_jobs(cores: int | None = None, memory: int | None = None, warm_interpreters: int = 0) -> int:
    """Jobs at once when `--jobs` is not given: one per core, as many as the memory holds once the
    legs' warm interpreters (`warm_interpreters` of them) have theirs."""
    cores = machine_cores() if cores is None else cores
    memory = available_memory_bytes() if memory is None else memory
    jobs = cores
    if memory is not None:
        jobs = min(jobs, max(1, (memory - warm_interpreters * WARM_INTERPRETER_BYTES) // JOB_MEMORY_BYTES))
    return max(1, min(jobs, MAX_DEFAULT_JOBS))


def threads_per_process(jobs: int, processes: int = 1, cores: int | None = None) -> int | None:
    """Intra-op threads for each process of a job of `processes` processes when `jobs` jobs
    share the machine; None with one job at a time (torch's own default, as before)."""
    if jobs <= 1:
        return None
    cores = machine_cores() if cores is None else cores
    share = cores * min(processes, jobs) / jobs  # the job takes as many slots as it has processes
    return max(1, int(share // max(1, processes)))


def thread_environment(threads: int | None, environment: dict[str, str]) -> dict[str, str]:
    """The thread settings for a job (contract.THREAD_ENV: torch's intra-op pool and torch.compile's
    kernel compiler), unless the spec's environment or this shell already says (a user's setting wins).
    Two jobs side by side on 2 cores each started inductor's pool of compile worker processes without
    the last: a cold torch.compile job took 36.6 s to compile with it, 31.1 s with one compile thread."""
    if threads is None:
        return {}
    return {name: str(threads) for name in THREAD_ENV if name not in environment and name not in os.environ}


def rendezvous_environment(processes: int, environment: Mapping[str, str]) -> dict[str, str]:
    """A free port for a job of several processes to meet on. Every job's launcher defaults to
    the same one (7777, as on SageMaker, where each job has its instances to itself); two such
    jobs side by side on this machine would both bind it. A port the spec sets is kept."""
    if processes <= 1 or ENV["master_port"] in environment:
        return {}
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return {ENV["master_port"]: str(s.getsockname()[1])}


def warms_locally(environment: Mapping[str, str]) -> bool:
    """Whether a job's compile cache can warm on this machine: a `torch.compile` leg's inductor
    cache can; PyTorch/XLA on the CPU writes its persistent cache but cannot load it back
    (pytorch/xla 9094), so an XLA leg's later seeds gain nothing by waiting for the first."""
    return environment.get(ENV["torch_compile"]) == "1" and bool(environment.get(ENV["compile_cache"]))
