"""Script mode's metrics: what an unchanged script already prints or writes, read the way
SageMaker reads it.

* `LogMetrics`: the spec's metric regexes (SageMaker's MetricDefinitions form: the first group
  is the value) applied to every line of the job's output, as SageMaker applies the same
  definitions to the job's log; every match is one record in metrics.jsonl, numbered by its
  occurrence (a log line carries no step number SageMaker could use either).
* `trainer_state`: a Hugging Face Trainer's `trainer_state.json` (`log_history`, with real step
  numbers), the newest one the job left.

The launcher reads them through its metric sources (training/metric_sources), in the supervising
process, around the script. Torch-free.
"""
from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bakeoff_runtime.contract.script_mode import MetricRegex

TRAINER_STATE = "trainer_state.json"
# log_history keys that are bookkeeping, not measurements of the model
_HF_BOOKKEEPING = {"step", "epoch", "total_flos", "learning_rate", "grad_norm", "train_runtime",
                   "train_samples_per_second", "train_steps_per_second", "eval_runtime",
                   "eval_samples_per_second", "eval_steps_per_second"}


def _number(text: str) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


MATCH_CHARS = 4096  # of a line, for the regexes: a line of megabytes is cut, and the log says so once


class LogMetrics:
    """Applies the regexes line by line; writes metrics.jsonl as it goes and keeps, of each metric, only
    its first and last values and how many there were: memory does not grow with the lines a job prints
    (every value is in metrics.jsonl, on disk)."""

    def __init__(self, metrics: tuple[MetricRegex, ...], loss_metric: str, out: Path | None,
                 started_at: float | None = None, on_value: Callable[[str, float, int], None] | None = None):
        self.patterns = [(m.name, re.compile(m.regex)) for m in metrics]
        self.on_value = on_value
        self.loss_metric = loss_metric
        self.started_at = started_at if started_at is not None else time.time()
        self.first: dict[str, float] = {}
        self.last: dict[str, float] = {}
        self.count: dict[str, int] = {}
        self.cut_lines = 0
        self._fh = None
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(out, "a", buffering=1)  # noqa: SIM115  (closed in close())

    @property
    def series(self) -> dict[str, list[float]]:
        """Each metric's first and last value (one when it was read once)."""
        return {name: ([self.first[name]] if self.count[name] == 1 else [self.first[name], self.last[name]])
                for name in self.count}

    def feed(self, line: str) -> None:
        if len(line) > MATCH_CHARS:
            if not self.cut_lines:
                print(f"[bakeoff] a line of {len(line):,} characters was cut to its first {MATCH_CHARS:,} for the "
                      "metric regexes (so are longer lines after it)", flush=True)
            self.cut_lines += 1
            line = line[:MATCH_CHARS]
        for name, pattern in self.patterns:
            m = pattern.search(line)
            if not m or not m.groups():
                continue
            value = _number(m.group(1))
            if value is None:
                continue
            n = self.count.get(name, 0) + 1
            self.count[name] = n
            self.first.setdefault(name, value)
            self.last[name] = value
            if self.on_value is not None:
                self.on_value(name, value, n)
            if self._fh is not None:
                kind = "train" if name == self.loss_metric else "eval"
                key = "train_loss" if name == self.loss_metric else name
                record = {"kind": kind, "step": n, "time_s": round(time.time() - self.started_at, 4),
                          key: value if math.isfinite(value) else str(value), "source": "log"}
                self._fh.write(json.dumps(record) + "\n")

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


MAX_STATE_BYTES = 64 * 2**20  # a trainer_state.json larger than this is not read (a Trainer's is kilobytes)


def _state_files(roots: list[Path]) -> dict[Path, tuple[int, int, int]]:
    out: dict[Path, tuple[int, int, int]] = {}
    for root in roots:
        if not root.is_dir():
            continue
        for path in root.rglob(TRAINER_STATE):
            try:
                st = path.stat()
            except OSError:
                continue
            out[path] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return out


def trainer_state_snapshot(roots: list[Path]) -> dict[Path, tuple[int, int, int]]:
    """The trainer_state.json files there before the script starts (inode, size, mtime): the one the job
    wrote is one that is new or changed afterwards, whatever the clock did meanwhile."""
    return _state_files(roots)


def find_trainer_state(roots: list[Path], before: dict[Path, tuple[int, int, int]]) -> Path | None:
    """The trainer_state.json the job wrote: new or changed since `before`, the latest written first."""
    found = [(stat[2], path) for path, stat in _state_files(roots).items() if before.get(path) != stat]
    return max(found)[1] if found else None


def _step(value: Any, index: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return index
    return int(value)


def trainer_state(path: Path, loss_metric: str) -> tuple[dict[str, list[float]], list[dict[str, Any]]]:
    """(series by name: each metric's first and last value, metrics.jsonl records) from a Trainer's
    log_history: `loss` is the training loss, every other number a metric under its own name
    (`eval_loss`, ...). A file too large, not JSON, or not a Trainer's is read as holding nothing: the
    job then reports no metric, which the evaluation names, and nothing here raises."""
    try:
        if path.stat().st_size > MAX_STATE_BYTES:
            return {}, []
        body = json.loads(path.read_text(errors="replace"))
    except (OSError, ValueError, RecursionError):
        return {}, []
    history = body.get("log_history") if isinstance(body, dict) else None
    if not isinstance(history, list):
        return {}, []
    series: dict[str, list[float]] = {}
    records: list[dict[str, Any]] = []
    for index, entry in enumerate(history):
        if not isinstance(entry, dict):
            continue
        step = _step(entry.get("step"), index)
        for key, value in entry.items():
            if not isinstance(key, str) or key in _HF_BOOKKEEPING or isinstance(value, bool) \
                    or not isinstance(value, (int, float)):
                continue
            name = loss_metric if key == "loss" else key
            kept = series.setdefault(name, [])
            kept[1:] = [float(value)] if kept else []
            if not kept:
                kept.append(float(value))
            kind = "train" if name == loss_metric else "eval"
            records.append({"kind": kind, "step": step, ("train_loss" if kind == "train" else name):
                            value if math.isfinite(value) else str(value), "source": TRAINER_STATE})
    return series, records
