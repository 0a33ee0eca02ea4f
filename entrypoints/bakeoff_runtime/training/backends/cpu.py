from __future__ import annotations

import torch

from bakeoff_runtime.training.backends import Backend


class CpuBackend(Backend):
    name = "cpu"
    autocast_device_type = "cpu"
    distributed_backend = "gloo"

    def device(self) -> torch.device:
        return torch.device("cpu")
