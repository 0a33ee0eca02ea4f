"""The shape every kind of leg fills in."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

# Deep Learning Containers are published from this account in most regions.
DLC_ACCOUNT = "763104351884"


@dataclass(frozen=True)
class Price:
    """An on-demand price with where it came from; every bundled row carries both."""

    usd_per_hour: float
    source: str
    as_of: str
    region: str = "us-east-1"
    note: str = ""


@dataclass(frozen=True)
class InstanceType:
    name: str
    accelerator: str | None  # e.g. "Trainium", "A100 40GB"; None for CPU-only
    accelerators: int  # chips or GPUs
    devices: int  # processes one job runs per instance (NeuronCores, GPUs, or 1)
    vcpus: int
    memory_gib: int
    accelerator_memory_gib: int = 0


@dataclass(frozen=True)
class LocalEmulation:
    """How a leg of this kind runs on this machine."""

    backend: str
    device_label: str
    environment: dict[str, str] = field(default_factory=dict)


class LegKind:
    """A family of instances with the backends that run on it.

    Subclasses declare the catalog and defaults; the methods turn a leg into the
    parts of a CreateTrainingJob request that depend on its kind.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    backends: ClassVar[tuple[str, ...]]
    default_backend: ClassVar[str]
    instances: ClassVar[dict[str, InstanceType]]
    # torch.distributed backend its multi-device jobs use.
    distribution: ClassVar[str] = "gloo"
    # Backends whose graphs are compiled ahead of the step (their cache matters).
    compiled_backends: ClassVar[tuple[str, ...]] = ()

    def default_image(self, backend: str, region: str = "us-east-1") -> str:
        raise NotImplementedError

    def environment(self, backend: str, precision: str) -> dict[str, str]:
        """Container environment this kind always sets (no per-execution values)."""
        return {}

    def local_emulation(self, backend: str, gpu_available: bool) -> LocalEmulation:
        raise NotImplementedError

    def supports(self, backend: str) -> bool:
        return backend in self.backends


def instance(name, accelerator, accelerators, devices, vcpus, memory_gib, accelerator_memory_gib=0):
    return InstanceType(name, accelerator, accelerators, devices, vcpus, memory_gib, accelerator_memory_gib)
