"""Whose failure a job's failure is: the platform's (infrastructure) or the script's.

It decides how the job exits. A script failure exits 0 on SageMaker (the failure is recorded
in summary.json and the Evaluate step names it), because re-running the same script on the
same inputs fails the same way. An infrastructure failure (a process killed by a signal, a
collective or rendezvous that broke, a Neuron runtime or hardware error) exits non-zero: the
step fails, so SageMaker's step cache never serves it again ("Step caching only considers
successful execution", sagemaker-python-sdk `CacheConfig`;
docs.aws.amazon.com/sagemaker/latest/dg/pipelines-caching.html), and a retried or restarted
execution runs that seed afresh while every succeeded step comes from the cache.

Torch-free: the launcher (which sees the workers' output) and the runtime (which sees the
exception) both ask this module, so they cannot disagree.
"""
from __future__ import annotations

import re

INFRASTRUCTURE = "infrastructure"

# torch.distributed's own error classes (c10d: DistBackendError for a failed collective in
# NCCL, Gloo or XLA; DistNetworkError and DistStoreError for the rendezvous and its store).
# They arrive as the exception's type name at the start of a reason ("DistBackendError: ...").
_TORCH_DISTRIBUTED = ("DistBackendError", "DistNetworkError", "DistStoreError")

# Neuron Runtime status codes for hardware, network and collectives faults (aws-neuron-sdk,
# neuron-runtime/api/nrt_status.rst, NRT_STATUS in src/libnrt/include/nrt/nrt_status.h).
# NRT_RESOURCE and NRT_FAIL_HOST_MEM_ALLOC are left out: running out of memory repeats.
_NEURON_RUNTIME = ("NRT_HW_ERROR", "NRT_TIMEOUT", "NRT_EXEC_UNIT_UNRECOVERABLE", "NRT_EXEC_HW_ERR_COLLECTIVES",
                   "NRT_EXEC_HW_ERR_HBM_UE", "NRT_EXEC_HW_ERR_NC_UE", "NRT_EXEC_HW_ERR_DMA_ABORT",
                   "NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE", "NRT_NETWORK_PROXY_FAILURE", "NRT_COLL_PENDING")

# torchrun reports a worker that died by a signal as "Signal 9 (SIGKILL) received by PID N"
# (torch/distributed/elastic/multiprocessing/errors/__init__.py, ProcessFailure) and exits 1,
# so the launcher sees a plain exit code: the signal is only in the output.
_WORKER_SIGNAL = re.compile(r"Signal (\d+) \((SIG[A-Z0-9]+)\) received by PID \d+")
_NAMED = [(re.compile(rf"\b{re.escape(name)}\b"), name) for name in _TORCH_DISTRIBUTED + _NEURON_RUNTIME]


def infrastructure_cause(*texts: str | None) -> str | None:
    """Why a failure is the platform's, read from its reason, failure file and output tail;
    None when nothing in them says so (then it is the script's)."""
    for text in texts:
        if not text:
            continue
        found = _WORKER_SIGNAL.search(text)
        if found:
            hint = " (often the out-of-memory killer)" if found.group(2) == "SIGKILL" else ""
            return f"a worker was killed by {found.group(2)}{hint}"
        for pattern, name in _NAMED:
            if pattern.search(text):
                line = next((ln.strip() for ln in text.splitlines() if name in ln), name)
                return line[:300]
    return None
