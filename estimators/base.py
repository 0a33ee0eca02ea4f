"""The shape every kind of leg fills in."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar


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
    # SageMaker runs EFA on it: the instances for which the SageMaker SDK's own torchrun
    # driver exports FI_PROVIDER=efa (sagemaker-train 1.27.0, container_drivers/common/utils.py,
    # SM_EFA_NCCL_INSTANCES), plus trn1n/trn2 from the Neuron docs (setup-trn1-multi-node-execution).
    efa: bool = False
    # FI_EFA_USE_DEVICE_RDMA=1 is set for it by that driver (SM_EFA_RDMA_INSTANCES) or the Neuron
    # docs; libfabric aborts when it is set on an EFA device without RDMA read (efa_rdm_util.c).
    efa_rdma: bool = False
    # Local NVMe instance storage: SageMaker refuses VolumeKmsKeyId for such instance types
    # (botocore sagemaker service model, ResourceConfig.VolumeKmsKeyId). From EC2
    # DescribeInstanceTypes as generated into eksctl pkg/utils/instance/instance_types.go
    # (8b75484b, 2026-08-12): every trn, p and g type here has it; m5 and c5 are EBS only.
    local_storage: bool = False
    # Published network bandwidth per instance, Gbps (0: not recorded); the collective check's
    # yardstick for jobs across instances. trn1: "EFA bandwidth (Gbps)" column of the Neuron docs'
    # Trn1/Trn1n architecture page (awsdocs-neuron.readthedocs-hosted.com, general/arch/neuron-hardware/
    # trn1-arch): trn1.2xlarge "up-to 25", trn1.32xlarge 800, trn1n.32xlarge 1,600. p4d: "400 Gbps
    # Elastic Fabric Adapter (EFA)" (AWS Compute blog, "Amazon EC2 P4d instances deep dive", 2020).
    # p5: "up to 3,200 Gbps" (EC2 User Guide, p5-efa: maximize network bandwidth with EFA).
    network_gbps: int = 0


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
        """The published image for `backend` in `region` (the catalog in estimators/images.py);
        raises images.NoDefaultImage where AWS publishes none."""
        from .images import default_image_uri

        return default_image_uri(backend, region)

    def environment(self, backend: str, precision: str) -> dict[str, str]:
        """Container environment this kind always sets (no per-execution values)."""
        return {}

    def network_environment(self, inst: InstanceType, instance_count: int) -> dict[str, str]:
        """libfabric settings for a job spanning several instances, as the SageMaker SDK's
        torchrun driver sets them (sagemaker-train 1.27.0, torchrun_driver.setup_env):
        FI_PROVIDER=efa on EFA instances; FI_EFA_USE_DEVICE_RDMA=1 and RDMAV_FORK_SAFE=1 where
        the device has RDMA read. Per-host values (interfaces, the root address) are the
        launcher's, from resourceconfig.json."""
        if instance_count < 2 or not inst.efa:
            return {}
        env = {"FI_PROVIDER": "efa"}
        if inst.efa_rdma:
            env.update(FI_EFA_USE_DEVICE_RDMA="1", RDMAV_FORK_SAFE="1")
        return env

    def multi_node_refusal(self, inst: InstanceType) -> str | None:
        """Why `inst` cannot run a job across instances, or None."""
        if inst.efa:
            return None
        return (f"{inst.name} has no EFA on SageMaker, so a job across instances would talk over TCP and measure "
                "the network rather than the chips; use instance_count: 1 or an EFA instance type")

    def local_emulation(self, backend: str, gpu_available: bool) -> LocalEmulation:
        raise NotImplementedError

    def supports(self, backend: str) -> bool:
        return backend in self.backends


def instance(name, accelerator, accelerators, devices, vcpus, memory_gib, accelerator_memory_gib=0, **network):
    return InstanceType(name, accelerator, accelerators, devices, vcpus, memory_gib, accelerator_memory_gib, **network)
