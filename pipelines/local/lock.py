"""One `bakeoff run` per run directory: a second one refuses, naming the first."""
from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from pipelines.errors import SpecError


class RunLock:
    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / ".bakeoff.lock"
        self._fh: Any = None

    def __enter__(self) -> RunLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(self.path, "a+")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.seek(0)
            try:
                holder = json.loads(fh.read() or "{}")
            except ValueError:
                holder = {}
            fh.close()
            who = (f"pid {holder.get('pid')} on {holder.get('host')}, `{holder.get('command')}`, since "
                   f"{holder.get('since')}") if holder else "another process"
            raise SpecError(f"this run directory is in use by {who}; wait for it to finish or give another "
                            "--out", file=str(self.path.parent)) from None
        fh.seek(0)
        fh.truncate()
        fh.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "command": " ".join(sys.argv),
                             "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}))
        fh.flush()
        self._fh = fh
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fh is not None:
            self._fh.seek(0)
            self._fh.truncate()
            fcntl.flock(self._fh, fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None
