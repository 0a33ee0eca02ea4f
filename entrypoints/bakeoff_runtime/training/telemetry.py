"""Per-step and per-run telemetry: metrics.jsonl, summary.json, stdout, MLflow.

Files are the record of truth (the evaluation reads them, never MLflow), written
line by line and flushed so a job that dies keeps every line it logged. Stdout
lines have a fixed `name=value` form that SageMaker metric-definition regexes read.
"""
from __future__ import annotations

import json
import math
import os
import platform
import resource
import socket
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from bakeoff_runtime.contract import SUMMARY_SCHEMA, say_line, step_line
from bakeoff_runtime.contract.phases import Phase, phase_line


def peak_host_memory_bytes() -> int:
    # ru_maxrss is KiB on Linux, bytes on macOS.
    scale = 1 if sys.platform == "darwin" else 1024
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale)


def host_environment() -> dict[str, str]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "hostname": socket.gethostname(),
        "cpu_count": str(os.cpu_count()),
    }


class Telemetry:
    """Collects what one job measured; only rank 0 writes."""

    def __init__(self, model_dir: Path, info: dict[str, Any], sink=None, rank: int = 0,
                 started_at: float | None = None, stdout=None):
        self.model_dir = Path(model_dir)
        self.info = dict(info)
        self.sink = sink
        self.rank = rank
        self.started_at = started_at if started_at is not None else time.time()
        self.stdout = stdout or sys.stdout
        # Records go to metrics.jsonl line by line and are never kept here: a job's memory stays
        # flat however many steps it logs (benchmarks/telemetry_memory.py).
        self._fh: TextIO | None = None
        if rank == 0:
            self.model_dir.mkdir(parents=True, exist_ok=True)
            # Open for the job's lifetime, line-buffered: a job that dies keeps every line (closed in close()).
            self._fh = open(self.model_dir / "metrics.jsonl", "a", buffering=1)  # noqa: SIM115

    def elapsed(self) -> float:
        return time.time() - self.started_at

    def log(self, kind: str, step: int, **values: Any) -> None:
        if self.rank != 0:
            return
        record = {"kind": kind, "step": step, "time_s": round(self.elapsed(), 4), **values}
        if self._fh is None:  # rank 0 opened it in __init__: only close() takes it away
            raise RuntimeError("telemetry is closed: nothing more can be logged")
        self._fh.write(json.dumps(record) + "\n")
        print(step_line(step, values), file=self.stdout, flush=True)
        if self.sink is not None:
            numeric = {k: float(v) for k, v in values.items()
                       if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}
            self.sink.log_metrics(numeric, step)

    def say(self, **values: Any) -> None:
        """A one-off `name=value` line (e.g. time to first step)."""
        if self.rank == 0:
            print(say_line(values), file=self.stdout, flush=True)

    def phase(self, phase: Phase) -> None:
        """`[bakeoff] phase=NAME` (contract/phases.py), once per change: the host's bar shows it."""
        if self.rank == 0 and phase != getattr(self, "_phase", None):
            self._phase = phase
            print(phase_line(phase), file=self.stdout, flush=True)

    def write_summary(self, summary: dict[str, Any]) -> dict[str, Any]:
        if self.rank != 0:
            return summary
        body = {"schema": SUMMARY_SCHEMA, **self.info, **summary,
                "peak_host_memory_bytes": peak_host_memory_bytes(),
                "wall_time_s": round(self.elapsed(), 3)}
        tmp = self.model_dir / "summary.json.tmp"
        tmp.write_text(json.dumps(body, indent=2, sort_keys=True, default=str))
        os.replace(tmp, self.model_dir / "summary.json")
        return body

    def close(self) -> None:
        if self._fh:
            self._fh.close()
            self._fh = None
