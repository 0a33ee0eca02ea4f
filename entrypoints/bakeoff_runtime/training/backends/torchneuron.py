"""TorchNeuron: the native PyTorch backend (device "neuron") on Trn2/Trn3.

It is eager PyTorch on a PrivateUse1 device, so the loop is the plain one; it only
exists inside Neuron images for trn2/trn3 and cannot be emulated here.
"""
from __future__ import annotations

import importlib.metadata

import torch

from bakeoff_runtime.training.backends import Backend, BackendUnavailable


class TorchNeuronBackend(Backend):
    name = "torchneuron"
    autocast_device_type = "neuron"
    distributed_backend = "neuron"

    def __init__(self, precision: str = "fp32", local_rank: int = 0):
        super().__init__(precision, local_rank)
        try:
            import torch_neuronx  # noqa: F401  (registers the "neuron" device)
        except ImportError as exc:
            raise BackendUnavailable(
                "backend 'torchneuron' needs the TorchNeuron runtime (trn2/trn3 Neuron images only)"
            ) from exc
        self._device = torch.device("neuron", local_rank)

    def device(self) -> torch.device:
        return self._device

    def synchronize(self) -> None:
        sync = getattr(getattr(torch, "neuron", None), "synchronize", None)
        if sync:
            sync()

    def versions(self):
        out: dict[str, str] = {"torch": torch.__version__}
        for dist in ("torch-neuronx", "neuronx-cc"):
            try:
                out[dist] = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                pass
        return out
