"""Trainium 2 (ml.trn2): torch-neuronx (XLA) or TorchNeuron, the native backend."""
from __future__ import annotations

from bakeoff_runtime.contract.backend_table import row

from .base import InstanceType, LegKind, LocalEmulation, instance
from .trn1 import Trn1, neuron_network_environment


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
        # The Neuron compiler's flags and rounding that trn1 sets: torch-neuronx's, not TorchNeuron's.
        return Trn1().environment(backend, precision) if row(backend).torch_neuronx else {}

    def network_environment(self, inst: InstanceType, instance_count: int) -> dict[str, str]:
        # Both backends run on the Neuron runtime, whose multi-node check is the same as on trn1.
        return neuron_network_environment(super().network_environment(inst, instance_count))

    def local_emulation(self, backend: str, gpu_available: bool) -> LocalEmulation:
        if not row(backend).local_emulation:
            raise ValueError(f"backend {backend!r} cannot be emulated on this machine (trn2/trn3 images only)")
        return LocalEmulation("neuron", "local xla:cpu", {"PJRT_DEVICE": "CPU"})


KIND = Trn2()
