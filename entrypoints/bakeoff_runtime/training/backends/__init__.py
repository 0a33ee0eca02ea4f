"""Backend adapters: the only thing that differs between the legs of a bake-off.

A small registry of names to implementations (each row's `adapter` in
bakeoff_runtime.contract.backend_table), imported lazily so that a CUDA image never imports
torch_xla and a Neuron image never touches CUDA.
"""
from __future__ import annotations

import importlib
from contextlib import nullcontext
from typing import Any

import torch

from bakeoff_runtime.contract.backend_table import BACKENDS, row

REGISTRY: dict[str, str] = {name: r.adapter for name, r in BACKENDS.items()}

PRECISIONS = ("fp32", "bf16")


class BackendUnavailable(RuntimeError):
    """The backend's runtime is not present in this image or on this host."""


class Backend:
    """What the training loop needs from a device family. Subclasses override."""

    name = "base"
    autocast_device_type = "cpu"
    distributed_backend = "gloo"
    # Backends that trace lazily need an explicit step boundary.
    lazy = False

    def __init__(self, precision: str = "fp32", local_rank: int = 0):
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        self.precision = precision
        self.local_rank = local_rank

    def device(self) -> torch.device:
        raise NotImplementedError

    def autocast(self):
        # fp32 master weights always; bf16 only inside the forward pass.
        if self.precision == "bf16":
            return torch.autocast(device_type=self.autocast_device_type, dtype=torch.bfloat16)
        return nullcontext()

    def optimizer_step(self, optimizer: torch.optim.Optimizer, clip_grad_norm: float = 0.0):
        """One algorithm on every backend: average gradients across ranks, clip their global
        norm, step. Returns the gradient norm before clipping when clipping, else None."""
        self.reduce_gradients(optimizer)
        norm = None
        if clip_grad_norm and clip_grad_norm > 0:
            params = [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
            norm = torch.nn.utils.clip_grad_norm_(params, clip_grad_norm)
        optimizer.step()
        return norm

    def reduce_gradients(self, optimizer: torch.optim.Optimizer) -> None:
        """Average gradients across ranks. DistributedDataParallel already did, during backward."""

    def mark_step(self) -> None:
        """End of one training step (a graph boundary on lazy backends)."""

    def synchronize(self) -> None:
        """Block until queued device work is done (for honest timing)."""

    def wrap_model(self, model: torch.nn.Module, world_size: int) -> torch.nn.Module:
        if world_size > 1:
            from torch.nn.parallel import DistributedDataParallel

            ids = [self.local_rank] if self.device().type == "cuda" else None
            return DistributedDataParallel(model, device_ids=ids)
        return model

    def compile_stats(self) -> dict[str, Any]:
        """Graphs compiled and seconds spent compiling, where the backend tells it."""
        return {"compiled_graphs": None, "compile_time_s": None}

    def peak_device_memory_bytes(self) -> int | None:
        return None

    def versions(self) -> dict[str, str]:
        return {"torch": torch.__version__}

    def describe(self) -> str:
        return f"{self.name} on {self.device()}"


def get_backend(name: str, precision: str = "fp32", local_rank: int = 0) -> Backend:
    module_name, _, cls_name = row(name).adapter.partition(":")  # a ValueError naming the known ones
    cls = getattr(importlib.import_module(module_name), cls_name)
    return cls(precision=precision, local_rank=local_rank)
