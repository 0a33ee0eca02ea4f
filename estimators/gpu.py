"""NVIDIA GPU instances (ml.p4d, ml.p4de, ml.p5, ml.g5, ml.g6): CUDA."""
from __future__ import annotations

from .base import LegKind, LocalEmulation, instance


class Gpu(LegKind):
    name = "gpu"
    description = "NVIDIA GPUs, CUDA"
    backends = ("cuda",)
    default_backend = "cuda"
    distribution = "nccl"
    instances = {
        i.name: i
        for i in (
            instance("ml.p4d.24xlarge", "A100 40GB", 8, 8, 96, 1152, 320, efa=True, efa_rdma=True, local_storage=True,
                     network_gbps=400),
            instance("ml.p4de.24xlarge", "A100 80GB", 8, 8, 96, 1152, 640, efa=True, efa_rdma=True, local_storage=True),
            instance("ml.p5.48xlarge", "H100 80GB", 8, 8, 192, 2048, 640, efa=True, efa_rdma=True, local_storage=True,
                     network_gbps=3200),
            instance("ml.g5.xlarge", "A10G 24GB", 1, 1, 4, 16, 24, local_storage=True),
            # EC2 lists EFA on g5.12xlarge, but SageMaker's own drivers enable it only on g5.48xlarge.
            instance("ml.g5.12xlarge", "A10G 24GB", 4, 4, 48, 192, 96, local_storage=True),
            instance("ml.g6.xlarge", "L4 24GB", 1, 1, 4, 16, 24, local_storage=True),
        )
    }

    def network_environment(self, inst, instance_count: int) -> dict[str, str]:
        env = super().network_environment(inst, instance_count)
        if env:
            env["NCCL_PROTO"] = "simple"  # what the SageMaker SDK's torchrun driver sets with EFA
        return env

    def local_emulation(self, backend: str, gpu_available: bool) -> LocalEmulation:
        if gpu_available:
            return LocalEmulation("cuda", "local cuda")
        return LocalEmulation("cpu", "local cpu")


KIND = Gpu()
