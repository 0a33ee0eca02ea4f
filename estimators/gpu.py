"""NVIDIA GPU instances (ml.p4d, ml.p4de, ml.p5, ml.g5, ml.g6): CUDA."""
from __future__ import annotations

from .base import DLC_ACCOUNT, LegKind, LocalEmulation, instance

GPU_TRAINING_IMAGE = "pytorch-training:2.9.0-gpu-py312-cu130-ubuntu22.04-sagemaker"


class Gpu(LegKind):
    name = "gpu"
    description = "NVIDIA GPUs, CUDA"
    backends = ("cuda",)
    default_backend = "cuda"
    distribution = "nccl"
    instances = {
        i.name: i
        for i in (
            instance("ml.p4d.24xlarge", "A100 40GB", 8, 8, 96, 1152, 320),
            instance("ml.p4de.24xlarge", "A100 80GB", 8, 8, 96, 1152, 640),
            instance("ml.p5.48xlarge", "H100 80GB", 8, 8, 192, 2048, 640),
            instance("ml.g5.xlarge", "A10G 24GB", 1, 1, 4, 16, 24),
            instance("ml.g5.12xlarge", "A10G 24GB", 4, 4, 48, 192, 96),
            instance("ml.g6.xlarge", "L4 24GB", 1, 1, 4, 16, 24),
        )
    }

    def default_image(self, backend: str, region: str = "us-east-1") -> str:
        return f"{DLC_ACCOUNT}.dkr.ecr.{region}.amazonaws.com/{GPU_TRAINING_IMAGE}"

    def local_emulation(self, backend: str, gpu_available: bool) -> LocalEmulation:
        if gpu_available:
            return LocalEmulation("cuda", "local cuda")
        return LocalEmulation("cpu", "local cpu")


KIND = Gpu()
