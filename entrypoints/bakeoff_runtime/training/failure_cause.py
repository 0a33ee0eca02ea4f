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

from bakeoff_runtime.contract.failure_kinds import (
    INFRASTRUCTURE,  # noqa: F401  (re-exported: launch.py and the Runtime read it here)
    LAUNCHER,
    LOCAL_EMULATION,
    MISSING_PACKAGE,
    NO_NETWORK,
    NOT_THE_LEGS,  # noqa: F401  (re-exported: the evaluation's, read by the container's tests)
    SCRIPT,
)

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


class BackendStartError(RuntimeError):
    """The Runtime could not start its backend on this instance: the device, its runtime or the process group
    (bakeoff_runtime.training.runtime, Runtime._start_backend). The platform's by construction, whatever the
    underlying error says: nothing of the script's has run yet but its request for a Runtime, whose backend,
    precision and process count the compiled job set."""


_BAKEOFF = (BackendStartError.__name__,)
_NAMED = [(re.compile(rf"\b{re.escape(name)}\b"), name)
          for name in _TORCH_DISTRIBUTED + _NEURON_RUNTIME + _BAKEOFF]


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


# --- a failure before the first optimizer step: the script's only where it shows it is ---------------
# Before a job's first optimizer step the platform has not yet shown that it works (the device, its runtime,
# the collectives, the compile cache), so a failure there is taken as the platform's unless it carries the
# script's mark: then it exits non-zero, is never served from the step cache, and a retry runs it again. An
# error this misses costs a re-run; a platform fault taken for the script's would be cached for 30 days.
#
# Errors of a program's own making: Python raises them the same way on every run with the same inputs,
# wherever in the stack (a wrong argument to a library is the caller's).
_PROGRAM_ERRORS = frozenset((
    "NameError", "TypeError", "ValueError", "AttributeError", "KeyError", "IndexError", "AssertionError",
    "SyntaxError", "IndentationError", "UnboundLocalError", "ZeroDivisionError", "NotImplementedError",
    "FileNotFoundError", "IsADirectoryError", "NotADirectoryError", "ImportError", "ModuleNotFoundError",
    "RecursionError", "LookupError", "ArithmeticError", "UnicodeDecodeError", "UnicodeEncodeError"))
# The port's findings, which repeat on the same instance type: the Neuron compiler failing on a graph
# ("INTERNAL: neuronx-cc compilation failed.", aws-neuron-sdk issues #601 and #768; "neuronx-cc failed with 1",
# #690; the compile wrapper's "There was a compilation error for this graph in the previous run", #601;
# "An Internal Compiler Error has occurred", #328), and running out of device memory (torch's
# OutOfMemoryError and its "CUDA out of memory", XLA's RESOURCE_EXHAUSTED, the Neuron runtime's NRT_RESOURCE).
_PORT_FINDINGS = re.compile(r"(neuronx?-cc compilation failed|neuronx?-cc failed with|There was a compilation "
                            r"error for this graph|An Internal Compiler Error has occurred|OutOfMemoryError|"
                            r"CUDA out of memory|RESOURCE_EXHAUSTED|NRT_RESOURCE)")
# torch's own words for a program's mistakes, raised as RuntimeError from C++ (aten's shape and device checks).
_TORCH_PROGRAM_ERRORS = re.compile(r"(shapes cannot be multiplied|size mismatch|Expected all tensors to be on the "
                                   r"same device|expected scalar type|must match the size of tensor|"
                                   r"Expected input batch_size|element 0 of tensors does not require grad)")
# A traceback's frame and the source line Python prints under it.
_FRAME = re.compile(r'^\s*File "([^"]+)", line \d+[^\n]*\n(?:[ \t]+(?!File ")(\S[^\n]*))?', re.MULTILINE)
_EXCEPTION = re.compile(r"^(?:\[rank\d+\]:\s*)?((?:[A-Za-z_]\w*\.)*([A-Z]\w*(?:Error|Exception|Exit|Failure)))\b",
                        re.MULTILINE)
_LIBRARIES = ("site-packages", "dist-packages", "/lib/python")


def before_first_step_cause(text: str, code_dir: str | None) -> str | None:
    """Why a failure before the job's first optimizer step is taken as the platform's, read from its output
    (or traceback); None when the failure shows it is the script's: an error of the program's own making
    (by its class, or torch's words for a shape or device mistake), one the script's own code raised (the
    innermost frame is under `code_dir`, outside installed libraries, and its line is a `raise` or an
    `assert`), argparse's usage error, a process that exited by itself without a traceback, or a finding of
    the port (a compiler failure, running out of memory)."""
    if (_PORT_FINDINGS.search(text) or _TORCH_PROGRAM_ERRORS.search(text)
            or re.search(r"^\S+: error: ", text, re.MULTILINE)):
        return None
    if "Traceback (most recent call last)" not in text:
        return None  # the script chose to exit (sys.exit(1), exit("why")): nothing was raised
    exceptions = _EXCEPTION.findall(text)
    if exceptions and exceptions[-1][1] in _PROGRAM_ERRORS:
        return None
    frames = _FRAME.findall(text)
    innermost, source = frames[-1] if frames else (None, "")
    # Raised by the script's own Python (`raise ...`, `assert ...` on its line): an exception a library
    # raises from C++ has the script's call as its innermost frame too, so the line itself must say it.
    if (innermost and code_dir and _inside(innermost, code_dir) and not any(m in innermost for m in _LIBRARIES)
            and re.match(r"(raise|assert)\b", source or "")):
        return None
    raised = exceptions[-1][0] if exceptions else "an error"
    where = f" inside {innermost}" if innermost else ""
    return (f"{raised}{where} before the job's first optimizer step, not recognised as the script's (bakeoff takes "
            "such a failure as the platform's, so it is never served from the step cache and a retry runs it again)")


def _inside(path: str, directory: str) -> bool:
    directory = directory.rstrip("/") + "/"
    return path.startswith(directory) or (not path.startswith("/") and not path.startswith("<"))


# --- who must act on a failure that is not the platform's --------------------------------------
# The summary's failure_kind names who must act (contract/failure_kinds.py): the script's author, whoever
# builds its environment, its network or data, bakeoff's launcher, or this machine. The evaluation counts
# none but the script's as evidence about a leg, and says the bake-off could not run rather than asking
# for more seeds.

# What a failed import says (ModuleNotFoundError, and an ImportError naming a missing library).
_MISSING = re.compile(r"\b(ModuleNotFoundError: No module named '[^']+'|ImportError: (cannot import name|No module "
                      r"named|lib\S+\.so\S*: cannot open shared object file)[^\n]*)")
# What a job without a network sees: name resolution, an unreachable network or host, a refused or timed-out
# connection, and the wrappers urllib, requests/urllib3 and torchvision's downloads put around them.
_NETWORK = re.compile(r"(Temporary failure in name resolution|Name or service not known|nodename nor servname|"
                      r"Network is unreachable|No route to host|Failed to establish a new connection|"
                      r"Could not resolve host|getaddrinfo failed|URLError|ConnectTimeout|"
                      r"Max retries exceeded with url|Error downloading \S+|Failed to download)")
# torch's words for "no CUDA here": the CUDA build without a driver, with a driver and no device, and a CPU
# build (c10/cuda/CUDAFunctions.cpp; torch/cuda/__init__.py _lazy_init; tried with torch 2.9.0).
_NO_CUDA = re.compile(r"(Found no NVIDIA driver on your system|No CUDA GPUs are available|Torch not compiled with "
                      r"CUDA enabled|no CUDA-capable device is detected|CUDA driver initialization failed)")
_TORCHRUN_VARIABLE = re.compile(r"KeyError: '(RANK|LOCAL_RANK|WORLD_SIZE|LOCAL_WORLD_SIZE|MASTER_ADDR|MASTER_PORT)'")
# A line that says what went wrong: an exception ("ValueError: ...", "torch.OutOfMemoryError: ...") or
# argparse's "prog: error: ...".
_WORDS = re.compile(r"^(\S+: error: .+|([A-Za-z_][\w.]*\.)?[A-Z]\w*(Error|Exception|Exit|Interrupt|Failure)\b.*)$")
# What torchrun and bakeoff's own launcher add after a worker's traceback: never the cause.
_NOISE = re.compile(r"^(\[bakeoff\]|W\d{4} |E\d{4} |I\d{4} |\[rank\d+\]:?\s*$|=+$|-+$|Traceback|Root Cause|Failures:|"
                    r"\[\d+\]:|\s+(time|host|rank|exitcode|error_file|traceback)\s*:|.*ChildFailedError|"
                    r"torch\.distributed\.elastic|.*To enable traceback see|.*<NO_OTHER_FAILURES>|  File \"|    )")
REASON_CHARS = 500


def last_words(output: str) -> str | None:
    """The line of a failed process's last output that says what went wrong, with the line before it
    where that one is the start of the message; None when the output says nothing."""
    lines = [ln.rstrip() for ln in output.splitlines() if ln.strip()]
    lines = [re.sub(r"^\[rank\d+\]:\s*", "", ln) for ln in lines]
    meaningful = [ln for ln in lines if not _NOISE.match(ln)]
    for line in reversed(meaningful):
        if _WORDS.match(line.strip()):
            return line.strip()[:REASON_CHARS]
    return meaningful[-1].strip()[:REASON_CHARS] if meaningful else None


def classify(text: str, emulated_on: str | None = None) -> tuple[str, str | None]:
    """(failure kind, what to do) for a failure whose exception or output reads `text`."""
    if _TORCHRUN_VARIABLE.search(text):
        var = _TORCHRUN_VARIABLE.search(text).group(1)  # type: ignore[union-attr]
        return LAUNCHER, (f"the script reads {var}, which torchrun sets, but it was started as one process: set "
                          "entrypoint.script_mode.distributed: true so that torchrun starts it (on SageMaker too)")
    found = _MISSING.search(text)
    if found:
        return MISSING_PACKAGE, (f"{found.group(1)}: the script's environment lacks it; list it in a requirements.txt "
                                 "beside the script (SageMaker installs it), or install it in this Python for a local "
                                 "run")
    emulated_cpu = bool(emulated_on) and "cuda" not in (emulated_on or "") and "gpu" not in (emulated_on or "")
    if emulated_cpu and _NO_CUDA.search(text):
        return LOCAL_EMULATION, (f"this machine runs the leg on {emulated_on}, but the script insists on CUDA: give "
                                 "the leg a `local:` block that makes it use the CPU (e.g. local: {arguments: "
                                 "[--device, cpu]}); `bakeoff run` alone uses it, the deployed spec is unchanged")
    found = _NETWORK.search(text)
    if found:
        return NO_NETWORK, (f"the job could not reach the network ({found.group(1)}): give the data as a channel "
                            "(data.channels), or the job a route out (a VPC with a NAT, no network isolation)")
    return SCRIPT, None
