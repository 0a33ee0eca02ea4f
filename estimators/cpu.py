"""CPU-only instances (ml.m5, ml.c5): the cpu backend, for baselines and preflight."""
from __future__ import annotations

from .base import LegKind, LocalEmulation, instance


class Cpu(LegKind):
    name = "cpu"
    description = "CPU only"
    backends = ("cpu",)
    default_backend = "cpu"
    distribution = "gloo"
    instances = {
        i.name: i
        for i in (
            instance("ml.m5.xlarge", None, 0, 1, 4, 16),
            instance("ml.m5.2xlarge", None, 0, 1, 8, 32),  # the preflight step's default
            instance("ml.m5.4xlarge", None, 0, 1, 16, 64),
            instance("ml.c5.xlarge", None, 0, 1, 4, 8),
            instance("ml.c5.4xlarge", None, 0, 1, 16, 32),
        )
    }

    def local_emulation(self, backend: str, gpu_available: bool) -> LocalEmulation:
        return LocalEmulation("cpu", "local cpu")


KIND = Cpu()
