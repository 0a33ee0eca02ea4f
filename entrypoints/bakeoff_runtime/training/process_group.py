"""Leaving a torch.distributed process group while the interpreter is whole.

Left to interpreter exit, gloo's threads can free tensors after Python is gone, and a rank that
finished dies of SIGABRT: it reads as a killed worker, and the other hosts' torchrun waits at its
exit barrier (torch 2.9 distributed_c10d.destroy_process_group's own comment; pytorch/pytorch#179291).
The Runtime leaves the group it joined; the worker (launch.py) leaves one a script left behind, as
many brought scripts never call destroy_process_group().
"""
from __future__ import annotations

import sys


def leave(whose: str) -> None:
    """Destroy the default process group, if this process has one. Never raises: the job's results
    are written by now, and a failed teardown must not undo them."""
    dist = sys.modules.get("torch.distributed")  # a process that never imported it has no group
    if dist is None:
        return
    try:
        if dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()
    except Exception as exc:
        print(f"[bakeoff] WARNING: leaving {whose} process group failed: {exc}", flush=True)
