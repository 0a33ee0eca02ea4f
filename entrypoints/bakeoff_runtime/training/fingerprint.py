"""What a job trained, read from the optimizer, and the seeding every leg gets: shared by the
Runtime and by script mode's step hook."""
from __future__ import annotations

import random
from typing import Any

import torch


def model_record(optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """What was trained, from the optimizer's own parameters (taken at the first step, so it
    sees the model as it is on the device): where they live, how many there are and their
    shapes. Legs that train the same model agree on all but the device; weights un-tied by a
    move to XLA show as extra tensors of the tied shape."""
    seen: dict[int, torch.Tensor] = {}
    for group in optimizer.param_groups:
        for p in group["params"]:
            seen.setdefault(id(p), p)
    shapes: dict[str, int] = {}
    devices: dict[str, int] = {}
    for p in seen.values():
        key = "x".join(map(str, p.shape)) or "scalar"
        shapes[key] = shapes.get(key, 0) + 1
        devices[p.device.type] = devices.get(p.device.type, 0) + 1
    return {"parameters": int(sum(p.numel() for p in seen.values())), "tensors": len(seen),
            "shapes": dict(sorted(shapes.items())), "devices": dict(sorted(devices.items())),
            "source": "optimizer parameters at the first optimizer step"}


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy as np

        np.random.seed(seed % 2**32)
    except ImportError:
        pass
