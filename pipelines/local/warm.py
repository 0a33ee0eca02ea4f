"""One warm interpreter per leg of a local run: a process that has imported torch (and, for an
emulated trn leg, torch_xla) and forks the leg's job workers, so that a leg's later jobs skip
those imports (bakeoff_runtime.training.warm_server; launch.py asks it for its worker). Started with the
leg's first job, from that job's environment less what differs per job, so that what torch read
at import is what each job would have read; a job it cannot serve exactly starts cold, as on
SageMaker, where none exists.

Only for jobs of one process on one host that need no GPU: torchrun starts its own workers, and
a GPU leg's job is left as SageMaker would run it.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path

from bakeoff_runtime.contract import ENV, WARM_START_ENV, WARM_WORKER_ENV
from bakeoff_runtime.contract.backend_table import BACKENDS

# Read by launch.py through bakeoff_runtime.training.warm_worker.ADDRESS_ENV.
ADDRESS_ENV = WARM_WORKER_ENV
# Differ from one job of a leg to the next; the warm interpreter is started without them.
PER_JOB = (ENV["job_key"], ENV["opt_ml"], ADDRESS_ENV, "PWD", "OLDPWD")
DIR_PREFIX = "bakeoff-warm-"  # then the owning process's pid, a dash and mkdtemp's letters
STALE_AFTER_S = 10.0  # a directory younger than this may be one whose sockets are still being bound


def sweep_stale(tmp: str | None = None) -> list[str]:
    """Remove the socket directories of runs that are over: bakeoff-warm-PID-* of this user whose PID is
    not a running process and none of whose sockets answers. Another user's, a live run's (its pid runs, or
    an interpreter still listens: a pid of another pid namespace sharing /tmp), one just made, or one
    named any other way (before the pid was in the name) is left alone. The paths removed."""
    import stat
    import time

    tmp = tmp or tempfile.gettempdir()
    removed: list[str] = []
    try:
        names = [n for n in os.listdir(tmp) if n.startswith(DIR_PREFIX)]
    except OSError:
        return removed
    for name in names:
        pid = name[len(DIR_PREFIX):].split("-", 1)[0]
        path = os.path.join(tmp, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if not pid.isdigit() or int(pid) == os.getpid() or not stat.S_ISDIR(info.st_mode) \
                or info.st_uid != os.getuid() or time.time() - info.st_mtime < STALE_AFTER_S or _running(int(pid)):
            continue
        try:
            sockets = [os.path.join(path, n) for n in os.listdir(path)]
        except OSError:
            continue
        if any(_answers(s) for s in sockets):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a process of another user: running
        return True
    return True


def _answers(path: str) -> bool:
    """Whether an interpreter listens on the socket at `path` (a stale one refuses the connection)."""
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(path)
        except OSError:
            return False
    return True


def warm_start_enabled(environ: Mapping[str, str] = os.environ) -> bool:
    return environ.get(WARM_START_ENV, "1") != "0"


def starts_warm_interpreters(spec, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether a run of `spec` starts warm interpreters at all: not with BAKEOFF_WARM_START=0, and not for
    a brought script (launch.py starts a script-mode job's script cold, as SageMaker's toolkit would, so an
    interpreter for its leg would import torch and torch_xla for nothing: about 7 s of CPU a leg)."""
    return warm_start_enabled(environ) and spec.entrypoint.mode != "script"


def eligible(environment: Mapping[str, str], hosts: int) -> bool:
    """Whether a job's worker may come from its leg's warm interpreter."""
    backend = BACKENDS.get(environment.get(ENV["backend"], ""))
    processes = int(environment.get(ENV["nproc_per_node"], "1") or 1)
    return hosts == 1 and processes == 1 and backend is not None and not backend.local_needs_gpu


def server_environment(job_environment: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in job_environment.items() if k not in PER_JOB}


class WarmPool:
    """The warm interpreters of one batch of jobs, by leg; `close()` ends them."""

    def __init__(self, python: str, log_dir: Path) -> None:
        self.python = python
        self.log_dir = log_dir
        self._dir: str | None = None
        self._servers: dict[str, tuple[str, subprocess.Popen]] = {}
        self._failed: dict[str, str] = {}  # leg -> why its warm interpreter could not be started
        self._lock = threading.Lock()

    def environment(self, leg: str, environment: Mapping[str, str], hosts: int = 1) -> dict[str, str]:
        """What to add to a job's environment for its launcher to find its leg's warm
        interpreter (started now if it is the leg's first job); nothing for a job it cannot serve."""
        if not eligible(environment, hosts) or leg in self._failed:
            return {}
        with self._lock:
            if leg not in self._servers:
                try:
                    self._servers[leg] = self._start(leg, server_environment(environment))
                except OSError as exc:  # the job starts cold, as it always could
                    self._failed[leg] = str(exc)
                    return {}
            address, proc = self._servers[leg]
        return {ADDRESS_ENV: address} if proc.poll() is None else {}

    def _start(self, leg: str, environment: dict[str, str]) -> tuple[str, subprocess.Popen]:
        from bakeoff.pipelines.plan.bundle import entrypoints_dir

        # A private directory (0700) in /tmp: a Unix socket's path is limited to 107 bytes, and only this
        # user may ask for a fork. Its name carries this process's pid: the interpreters remove it when
        # this process is killed (warm_server.leave), and the next run removes one that outlived even them
        # (sweep_stale). The interpreter is started first and told its address after the directory is made:
        # a kill -9 in between leaves a directory that interpreter still removes (warm_server.read_address).
        prefix = os.path.join(tempfile.gettempdir(), f"{DIR_PREFIX}{os.getpid()}-")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        server = entrypoints_dir() / "bakeoff_runtime" / "training" / "warm_server.py"
        with open(self.log_dir / f"warm-{leg}.log", "w") as log:
            # Its own session (the terminal's Ctrl-C is the run's to handle). It ends when its stdin
            # does: when `close` closes it, or when this process ends, even by kill -9.
            proc = subprocess.Popen([self.python, str(server), "--address-on-stdin", prefix], env=environment,
                                    cwd=tempfile.gettempdir(), stdin=subprocess.PIPE, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        try:
            if self._dir is None:
                sweep_stale()
                self._dir = tempfile.mkdtemp(prefix=os.path.basename(prefix), dir=os.path.dirname(prefix))
            address = os.path.join(self._dir, f"{len(self._servers)}.sock")
            assert proc.stdin is not None
            proc.stdin.write(address.encode() + b"\n")
            proc.stdin.flush()
        except OSError:  # it ended already: the job starts cold
            proc.kill()
            proc.wait()
            raise
        return address, proc

    def close(self) -> None:
        with self._lock:
            servers, self._servers = list(self._servers.values()), {}
        for _, proc in servers:
            if proc.stdin is not None:
                proc.stdin.close()
        for _, proc in servers:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
