"""A child process that ends when the process that started it does, even after a `kill -9`.

Linux's prctl(PR_SET_PDEATHSIG) sends the child a signal when its parent dies; it is kept across
execve, so `/bin/sh -c "... exec python3 launch.py"` keeps it, and the launcher, on that SIGTERM,
stops its own workers' process group as it does when SageMaker stops a job. Elsewhere (not Linux)
nothing is set and the process outlives a killed parent, as before.

The signal is armed by a short Python the child execs into (`wrapped`), never in a `preexec_fn`: the
processes that start children here have threads, and a fork stuck before exec holds their pipes.
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


# The few lines `wrapped` runs before the real command: arm the signal, then become the command (execvp keeps
# it). Standard library only, with -I -S: nothing of the environment's Python paths or site-packages loads.
_ARM_THEN_EXEC = ("import ctypes, os, sys\n"
                  "parent, signum = int(sys.argv[1]), int(sys.argv[2])\n"
                  f"ctypes.CDLL(None, use_errno=True).prctl({PR_SET_PDEATHSIG}, signum, 0, 0, 0)\n"
                  "if os.getppid() != parent:\n"
                  "    os.kill(os.getpid(), signum)\n"
                  "os.execvp(sys.argv[3], sys.argv[3:])\n")


def wrapped(command: list[str], signum: int = signal.SIGTERM, python: str | None = None) -> list[str]:
    """`command`, started so that it ends with this process, for a process that has threads.

    `preexec_fn` runs Python between fork and exec, which "is NOT SAFE to use in the presence of threads in
    your application. The child process could deadlock before exec is called" (Python's subprocess docs,
    Popen's preexec_fn). The local engine starts jobs from several threads, and a `kill -9`'d run left such a
    child stuck before exec, holding the pipes its warm interpreters watch for the engine's end
    (tests/e2e/test_kill9_leftovers.py, in CI). So the child execs at once, into a short Python that arms the
    signal and execs the command (same pid, the signal kept across execve). Unchanged where the platform has no
    such signal."""
    if _prctl is None:
        return list(command)
    return [python or sys.executable, "-I", "-S", "-c", _ARM_THEN_EXEC, str(os.getpid()), str(int(signum)),
            *command]
