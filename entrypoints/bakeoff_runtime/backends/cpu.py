from __future__ import annotations

import torch

from . import Backend


class CpuBackend(Backend):
    name = "cpu"
    autocast_device_type = "cpu"
    distributed_backend = "gloo"

    def device(self) -> torch.device:
        return torch.device("cpu")
