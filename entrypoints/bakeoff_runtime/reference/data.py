"""Byte-level language-modelling batches from a train/validation channel.

A channel holds one `*.bin` file of raw bytes. Batch composition is a function of
(seed, step) alone and is the same for any number of devices: each rank takes its
slice of the one global batch, so legs with different device counts see identical data.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch


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
