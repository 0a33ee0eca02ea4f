"""The backends, one row each: what the spec, the estimators, the compiler, the local engine and
the container ask of a backend, read here instead of tested by name.

A new backend is a row here, an adapter module in bakeoff_runtime/training/backends/ and the leg kinds
that run it (`backends` in estimators/); the spec's `Backend` literal (pipelines/spec/fields.py) and the
JSON Schema's enum are derived from these rows.

Standard library only: the orchestration side imports it (tests/unit/test_boundaries.py, TORCH_FREE)
and the container reads it before torch is imported.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class BackendRow:
    name: str
    """The spec's `backend:` value, BAKEOFF_BACKEND in the job."""

    adapter: str
    """`module:Class` of its adapter, imported only when a job asks for it
    (bakeoff_runtime.training.backends.get_backend), so a CUDA image never imports torch_xla."""

    torch_device: str
    """The torch device type its parameters train on: validity's `backend:<leg>` check wants them
    there, and "xla" means PyTorch/XLA graphs (a job that compiled or ran none did not use it;
    XLA's CPU device cannot load cached executables, so an emulated leg shows no cache saving)."""

    accelerator: Literal["neuron", "gpu"] | None
    """What SageMaker counts on its hosts: "neuron" (SM_NUM_NEURONS, NeuronCores), "gpu"
    (SM_NUM_GPUS) or None (the CPU). launch.py starts one process per counted device. A Neuron
    backend is what `bakeoff preflight` checks by default, has a stochastic-rounding setting in the
    porting section, and, emulated in script mode, counts its processes as NeuronCores; a leg of a
    "gpu" backend that ran on the CPU here cannot show that it used a GPU."""

    torch_neuronx: bool
    """Trains through torch-neuronx (PyTorch/XLA on the Neuron compiler and runtime), so what is
    torch-neuronx's own applies: NEURON_CC_FLAGS from the Trainium kinds, NEURON_COMPILE_CACHE_URL
    pointed at the leg's S3 compile cache (an isolated job compiles cold: validation advice),
    `precompile:` with neuron_parallel_compile, and NEURON_RT_ROOT_COMM_ID on a multi-host job."""

    eager: bool
    """Runs eagerly: no graph compiler unless the spec says `compile: torch_compile` (allowed only
    on these), and the porting section shows its compiler flags as "none (eager)"."""

    collective_group: Literal["xla", "nccl", "gloo"]
    """The process group collective_check.py proves: torch-xla's, NCCL's, or gloo on the CPU."""

    local_emulation: bool
    """The local engine can run a leg of it on this machine (as itself, or as the stand-in its leg
    kind names in local_emulation)."""

    local_multi_process: bool
    """Its local emulation runs collectives across processes, so a scaling sweep's size runs as
    several gloo processes here; otherwise one process stands for all the devices."""

    local_one_process_why: str
    """Why one process stands for the devices of a sweep's size here (plan, terminal, report)."""

    local_needs_gpu: bool
    """A local job of it runs on this machine's GPU: `bakeoff run --jobs N` runs those one at a time."""

    default_baseline: bool
    """The spec's default parity baseline is the last leg of such a backend (the GPU a port is
    measured against); a spec with none takes its last leg."""

    no_image: str | None
    """What to say when AWS publishes no training image for it (the leg must give `image:`, whose
    region is its own); None: estimators/images.py's CATALOG has its default."""

    instances_note: str = ""
    """Added when a leg puts it on an instance kind that cannot run it."""

    spec_help: str = ""
    """What the spec's `backend` field says of it, after its name (the field's description, CLI help
    and JSON Schema come from the table: spec_backend_help)."""


_ONE_PROCESS = "one process (global batch kept)"

BACKENDS: dict[str, BackendRow] = {row.name: row for row in (
    BackendRow(
        "neuron", "bakeoff_runtime.training.backends.neuron:NeuronBackend", torch_device="xla", accelerator="neuron",
        torch_neuronx=True, eager=False, collective_group="xla", local_emulation=True, local_multi_process=False,
        # Tried with torch-xla 2.9.0: under torchrun each process sees a world of 1 and
        # CPU_NUM_DEVICES=2 hangs in XLA's rendezvous (tests/e2e/test_one_algorithm.py).
        local_one_process_why="PyTorch/XLA's CPU client cannot run collectives across processes, so one process "
                              "stands for all {devices} devices (global batch kept)",
        local_needs_gpu=False, default_baseline=False, no_image=None,
        spec_help="PyTorch/XLA as torch-neuronx, trn1/trn2"),
    BackendRow(
        # TorchNeuron, the native "neuron" device: a closed beta in Neuron images for trn2/trn3 only, so it
        # has neither a published image nor a local emulation (estimators/images.py, TORCHNEURON).
        "torchneuron", "bakeoff_runtime.training.backends.torchneuron:TorchNeuronBackend", torch_device="neuron",
        accelerator="neuron", torch_neuronx=False, eager=False,
        collective_group="gloo",  # the collective check has no TorchNeuron path of its own yet
        local_emulation=False, local_multi_process=False, local_one_process_why=_ONE_PROCESS,
        local_needs_gpu=False, default_baseline=False,
        no_image="(TorchNeuron, the native `neuron` device) has no published training image (a closed beta on "
                 "Trn2/Trn3)",
        instances_note="TorchNeuron is trn2/trn3 only", spec_help="native device, trn2+"),
    BackendRow(
        "cuda", "bakeoff_runtime.training.backends.cuda:CudaBackend", torch_device="cuda", accelerator="gpu",
        torch_neuronx=False, eager=True, collective_group="nccl", local_emulation=True, local_multi_process=False,
        local_one_process_why="one process on the local GPU stands for all {devices} devices (global batch kept)",
        local_needs_gpu=True, default_baseline=True, no_image=None),
    BackendRow(
        "cpu", "bakeoff_runtime.training.backends.cpu:CpuBackend", torch_device="cpu", accelerator=None,
        torch_neuronx=False, eager=True, collective_group="gloo", local_emulation=True,
        local_multi_process=True,  # gloo on the CPU
        local_one_process_why=_ONE_PROCESS, local_needs_gpu=False, default_baseline=False, no_image=None),
)}

# The backend the Preflight step runs a leg as, on a CPU instance (PJRT_DEVICE=CPU): its probes
# (bakeoff_runtime/training/probes.py) read PyTorch/XLA's metrics, so it is the torch-neuronx row.
PREFLIGHT_BACKEND = "neuron"


def row(name: str) -> BackendRow:
    """The row of backend `name`; a ValueError naming the known ones if there is none."""
    try:
        return BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; known: {', '.join(sorted(BACKENDS))}") from None


def spec_backend_help() -> str:
    """The spec's `backend` field's description: every row, in table order."""
    names = ", ".join(f"`{r.name}` ({r.spec_help})" if r.spec_help else f"`{r.name}`" for r in BACKENDS.values())
    return f"Backend adapter: {names}. Default: the instance kind's default."


def backends_where(wanted: Callable[[BackendRow], bool]) -> list[str]:
    """The backends whose row satisfies `wanted`, in table order (for messages: "cuda/cpu")."""
    return [name for name, r in BACKENDS.items() if wanted(r)]
