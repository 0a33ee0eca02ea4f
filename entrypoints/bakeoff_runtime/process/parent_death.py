"""A child process that ends when the process that started it does, even after a `kill -9`.

Linux's prctl(PR_SET_PDEATHSIG) sends the child a signal when its parent dies; it is kept across
execve, so `/bin/sh -c "... exec python3 launch.py"` keeps it, and the launcher, on that SIGTERM,
stops its own workers' process group as it does when SageMaker stops a job. Elsewhere (not Linux)
nothing is set and the process outlives a killed parent, as before.

`preexec_fn` runs between fork and exec, where taking a lock another thread held could deadlock:
the libc function is looked up here, at import, so the child only makes the one system call.
"""
from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1  # linux/prctl.h

_prctl: Callable[..., int] | None
try:
    if not sys.platform.startswith("linux"):
        raise OSError("not Linux")
    import ctypes

    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):
    _prctl = None


def dies_with_parent(signum: int = signal.SIGTERM):
    """A `preexec_fn` for subprocess.Popen (None where the platform has no such signal)."""
    if _prctl is None:
        return None
    parent = os.getpid()  # the parent's pid, taken before the fork

    def arm() -> None:
        _prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the signal was armed
            os.kill(os.getpid(), signum)

    return arm
