"""How this machine stands in for the instances a spec names: what the plan asks of the machine before
anything runs. Torch-free, and below both engines: the plan reads it, the local engine runs by it."""
from __future__ import annotations

import shutil
from pathlib import Path


def gpu_available() -> bool:
    """Whether this machine's local runs get a GPU: decided without importing torch (the orchestrator
    stays light)."""
    return bool(shutil.which("nvidia-smi")) and Path("/dev/nvidia0").exists()
