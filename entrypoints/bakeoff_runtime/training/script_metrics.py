"""Script mode's metrics: what an unchanged script already prints or writes, read the way
SageMaker reads it.

* `LogMetrics`: the spec's metric regexes (SageMaker's MetricDefinitions form: the first group
  is the value) applied to every line of the job's output, as SageMaker applies the same
  definitions to the job's log; every match is one record in metrics.jsonl, numbered by its
  occurrence (a log line carries no step number SageMaker could use either).
* `trainer_state`: a Hugging Face Trainer's `trainer_state.json` (`log_history`, with real step
  numbers), the newest one the job left.

Torch-free: the launcher runs this in the supervising process, around the script.
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


class LogMetrics:
    """Applies the regexes line by line; keeps every value and writes metrics.jsonl as it goes."""

    def __init__(self, metrics: tuple[MetricRegex, ...], loss_metric: str, out: Path | None,
                 started_at: float | None = None, on_value: Callable[[str, float, int], None] | None = None):
        self.patterns = [(m.name, re.compile(m.regex)) for m in metrics]
        self.on_value = on_value
        self.loss_metric = loss_metric
        self.started_at = started_at if started_at is not None else time.time()
        self.series: dict[str, list[float]] = {}
        self._fh = None
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(out, "a", buffering=1)  # noqa: SIM115  (closed in close())

    def feed(self, line: str) -> None:
        for name, pattern in self.patterns:
            m = pattern.search(line)
            if not m or not m.groups():
                continue
            value = _number(m.group(1))
            if value is None:
                continue
            values = self.series.setdefault(name, [])
            values.append(value)
            if self.on_value is not None:
                self.on_value(name, value, len(values))
            if self._fh is not None:
                kind = "train" if name == self.loss_metric else "eval"
                key = "train_loss" if name == self.loss_metric else name
                record = {"kind": kind, "step": len(values), "time_s": round(time.time() - self.started_at, 4),
                          key: value if math.isfinite(value) else str(value), "source": "log"}
                self._fh.write(json.dumps(record) + "\n")

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def find_trainer_state(roots: list[Path], since: float) -> Path | None:
    """The newest trainer_state.json written since the job started, under any of `roots`."""
    found: list[tuple[float, Path]] = []
    for root in roots:
        if not root.is_dir():
            continue
        for path in root.rglob(TRAINER_STATE):
            try:
                mtime = path.stat().st_mtime
            except OSError:
                continue
            if mtime >= since - 1:
                found.append((mtime, path))
    return max(found)[1] if found else None


def trainer_state(path: Path, loss_metric: str) -> tuple[dict[str, list[float]], list[dict[str, Any]]]:
    """(series by name, metrics.jsonl records) from a Trainer's log_history: `loss` is the
    training loss, every other number a metric under its own name (`eval_loss`, ...)."""
    history = json.loads(path.read_text()).get("log_history") or []
    series: dict[str, list[float]] = {}
    records: list[dict[str, Any]] = []
    for entry in history:
        step = entry.get("step")
        for key, value in entry.items():
            if key in _HF_BOOKKEEPING or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            name = loss_metric if key == "loss" else key
            series.setdefault(name, []).append(float(value))
            kind = "train" if name == loss_metric else "eval"
            records.append({"kind": kind, "step": step, ("train_loss" if kind == "train" else name): value,
                            "source": TRAINER_STATE})
    return series, records
