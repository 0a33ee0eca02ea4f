"""What a job trained, read from the optimizer, and the seeding every leg gets: shared by the
Runtime and by script mode's step hook."""
from __future__ import annotations

import random
from typing import Any

import torch


def model_record(optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """What was trained, from the optimizer's own parameters (taken at the first step, so it
    sees the model as it is on the device): training/evidence.parameter_record."""
    from bakeoff_runtime.training.evidence import FROM_OPTIMIZER, optimizer_parameters, parameter_record

    return parameter_record(optimizer_parameters(optimizer), FROM_OPTIMIZER)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy as np

        np.random.seed(seed % 2**32)
    except ImportError:
        pass
