"""Byte-level language-modelling batches from a train/validation channel.

A channel holds one `*.bin` file of raw bytes. Batch composition is a function of
(seed, step) alone and is the same for any number of devices: each rank takes its
slice of the one global batch, so legs with different device counts see identical data.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch


@dataclass(frozen=True)
class BatchSplit:
    """How one global batch is split over devices and accumulation steps: the same global
    batch on every leg is what makes their losses comparable."""

    global_batch_size: int
    world_size: int
    per_device_batch_size: int
    gradient_accumulation_steps: int

    @classmethod
    def from_hyperparameters(cls, hp: Callable[[str, Any], Any], world_size: int) -> BatchSplit:
        global_batch = int(hp("global_batch_size", 32))
        accumulation = int(hp("gradient_accumulation_steps", 1))
        per_device = int(hp("per_device_batch_size", global_batch // (world_size * accumulation)))
        if per_device * world_size * accumulation != global_batch:
            raise ValueError(
                f"global batch {global_batch} != per-device {per_device} x devices {world_size} "
                f"x accumulation {accumulation}: the job runs on a different device count than planned")
        return cls(global_batch, world_size, per_device, accumulation)

    def fairness(self) -> dict[str, int]:
        """The job summary's `fairness` record, which the evaluation compares across legs."""
        return {"global_batch_size": self.global_batch_size, "world_size": self.world_size,
                "per_device_batch_size": self.per_device_batch_size,
                "gradient_accumulation_steps": self.gradient_accumulation_steps}


def load_channel(path: Path) -> np.ndarray:
    path = Path(path)
    files = sorted(path.glob("*.bin")) if path.is_dir() else [path]
    if not files:
        raise FileNotFoundError(f"no *.bin file in data channel {path}")
    return np.concatenate([np.fromfile(f, dtype=np.uint8) for f in files])


class ByteBatches:
    def __init__(self, data: np.ndarray, sequence_length: int, global_batch_size: int, seed: int):
        if len(data) <= sequence_length + 1:
            raise ValueError(f"channel has {len(data)} bytes, fewer than sequence_length+1={sequence_length + 1}")
        self.data = torch.from_numpy(data.astype(np.int64))
        self.t = sequence_length
        self.global_batch = global_batch_size
        self.seed = seed

    def global_batch_at(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + step)
        starts = torch.randint(0, len(self.data) - self.t - 1, (self.global_batch,), generator=gen)
        idx = starts[:, None] + torch.arange(self.t + 1)[None, :]
        window = self.data[idx]
        return window[:, :-1], window[:, 1:]

    def micro_batches(self, step: int, rank: int, world_size: int, accumulation: int):
        """This rank's micro-batches of the global batch for `step`."""
        x, y = self.global_batch_at(step)
        per_rank = self.global_batch // world_size
        x, y = x[rank * per_rank:(rank + 1) * per_rank], y[rank * per_rank:(rank + 1) * per_rank]
        micro = per_rank // accumulation
        return [(x[i * micro:(i + 1) * micro], y[i * micro:(i + 1) * micro]) for i in range(accumulation)]


def validation_batches(data: np.ndarray, sequence_length: int, batch_size: int, n_batches: int):
    """Fixed, evenly spaced validation windows: the same on every leg and seed."""
    tensor = torch.from_numpy(data.astype(np.int64))
    total = batch_size * n_batches
    span = len(tensor) - sequence_length - 1
    starts = torch.linspace(0, span, total).long()
    idx = starts[:, None] + torch.arange(sequence_length + 1)[None, :]
    window = tensor[idx]
    return [(window[i * batch_size:(i + 1) * batch_size, :-1], window[i * batch_size:(i + 1) * batch_size, 1:])
            for i in range(n_batches)]
