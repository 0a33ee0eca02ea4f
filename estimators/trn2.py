"""Trainium 2 (ml.trn2): torch-neuronx (XLA) or TorchNeuron, the native backend."""
from __future__ import annotations

from .base import LegKind, LocalEmulation, instance
from .trn1 import Trn1


class Trn2(LegKind):
    name = "trn2"
    description = "AWS Trainium2 (trn2), torch-neuronx or TorchNeuron"
    backends = ("neuron", "torchneuron")
    default_backend = "neuron"
    distribution = "xla"
    compiled_backends = ("neuron", "torchneuron")
    instances = {
        i.name: i for i in (instance("ml.trn2.48xlarge", "Trainium2", 16, 64, 192, 2048, 1536, efa=True,
                                    local_storage=True),)
    }

    def environment(self, backend: str, precision: str) -> dict[str, str]:
        return Trn1().environment(backend, precision) if backend == "neuron" else {}

    def local_emulation(self, backend: str, gpu_available: bool) -> LocalEmulation:
        if backend == "torchneuron":
            raise ValueError("backend 'torchneuron' cannot be emulated on this machine (trn2/trn3 images only)")
        return LocalEmulation("neuron", "local xla:cpu", {"PJRT_DEVICE": "CPU"})


KIND = Trn2()
