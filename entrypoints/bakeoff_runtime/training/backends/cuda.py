from __future__ import annotations

import subprocess

import torch

from bakeoff_runtime.training.backends import Backend, BackendUnavailable


class CudaBackend(Backend):
    name = "cuda"
    autocast_device_type = "cuda"
    distributed_backend = "nccl"

    def __init__(self, precision: str = "fp32", local_rank: int = 0):
        super().__init__(precision, local_rank)
        if not torch.cuda.is_available():
            raise BackendUnavailable("backend 'cuda' needs a CUDA device and none is visible")
        torch.cuda.set_device(local_rank)
        torch.cuda.reset_peak_memory_stats()

    def device(self) -> torch.device:
        return torch.device("cuda", self.local_rank)

    def synchronize(self) -> None:
        torch.cuda.synchronize()

    def peak_device_memory_bytes(self) -> int | None:
        return int(torch.cuda.max_memory_allocated())

    def versions(self) -> dict[str, str]:
        out = {"torch": torch.__version__, "cuda": str(torch.version.cuda),
               "device_name": torch.cuda.get_device_name(self.local_rank)}
        try:
            driver = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                capture_output=True, text=True, timeout=10,
            ).stdout.split("\n")[0].strip()
            if driver:
                out["nvidia_driver"] = driver
        except (OSError, subprocess.SubprocessError):
            pass
        return out
