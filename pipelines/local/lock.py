"""One `bakeoff run` per run directory: a second one refuses, naming the first.

The lock is held on the run directory itself (flock on an open descriptor of the directory), not on
a file in it: deleting `.bakeoff.lock` while a run goes on cannot let a second run in. The file only
says who holds it; it is replaced by a rename (which replaces a link planted there instead of
following it) and read without following links. Taking the lock walks the directory first
(run_dir.check): a run directory with a link in it is refused before anything is written.
"""
from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path

from bakeoff.pipelines.errors import SpecError, words
from bakeoff.pipelines.params import OUT_DIR

from .files import write_json_atomically
from .run_dir import check, open_no_follow

LOCK_FILE = ".bakeoff.lock"


def _holder(path: Path) -> dict:
    try:
        fd = open_no_follow(path, os.O_RDONLY)
    except (OSError, SpecError):
        return {}
    try:
        with os.fdopen(fd, "rb") as fh:
            return json.loads(fh.read(64_000) or b"{}")
    except (OSError, ValueError):
        return {}


class RunLock:
    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LOCK_FILE
        self._fd: int | None = None

    def __enter__(self) -> RunLock:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        check(self.run_dir)  # before anything is written: no link in it may lead a write outside it
        fd = os.open(self.run_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            holder = _holder(self.path)
            who = (f"pid {holder.get('pid')} on {holder.get('host')}, `{holder.get('command')}`, since "
                   f"{holder.get('since')}") if holder else "another process"
            raise SpecError(words(f"this run directory is in use by {who}; wait for it to finish or give another ",
                                  OUT_DIR), file=str(self.run_dir)) from None
        self._fd = fd
        write_json_atomically(self.path, {"pid": os.getpid(), "host": socket.gethostname(),
                                          "command": " ".join(sys.argv),
                                          "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, indent=None)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            try:
                write_json_atomically(self.path, {})  # no holder now; the file stays as the run directory's marker
            except OSError:
                pass
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
