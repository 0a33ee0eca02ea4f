"""What a script logged to MLflow itself, recorded in its own processes: the evidence that a value in the
job's MLflow run came from its script and not from another job.

A script in script mode logs into the job's child run (MLFLOW_RUN_ID, tracking/script_run.py), and with
`metrics_from_mlflow` the verdict may use what it logged. Every job can reach the tracking server (on
SageMaker, one execution role; locally, one user), and MLflow records no writer, so a job could log
`val_loss` into another job's run while it runs. The run alone cannot tell those values apart; the script's
own processes can: each metric the script logs through MLflow's Python client passes through
`TrackingServiceClient.log_metric` or `.log_batch` (mlflow/tracking/_tracking_service/client.py, mlflow
3.17: `mlflow.log_metric(s)`, `MlflowClient.log_metric/log_batch`, autologging and async logging all end
there), which are wrapped here when that module is first imported, to append (run, key, step, value) to
the job's record (MLFLOW_WRITES_ENV). The launcher takes from the run only what the record accounts for
(`own_values`) and names the rest.

Nothing here imports MLflow: a script that never imports it pays one finder on sys.meta_path. Torch-free.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import math
import os
import sys
import threading
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bakeoff_runtime.contract import MLFLOW_WRITES_ENV

TARGET = "mlflow.tracking._tracking_service.client"
RECORD_FILE = "bakeoff-mlflow-writes.jsonl"  # under the job's output dir, beside the probe file
MAX_RECORD_BYTES = 256 * 1024 * 1024  # what the launcher reads back of the record, at most
_lock = threading.Lock()


def _value(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        try:  # a one-element tensor or array, as MLflow's convert_metric_value_to_float_if_possible takes
            return float(value.item())
        except Exception:
            return None


def _append(path: str, rows: Iterable[tuple[Any, Any, Any, Any]]) -> None:
    lines = "".join(json.dumps([str(run), str(key), int(step or 0), _text(_value(value))]) + "\n"
                    for run, key, step, value in rows)
    if not lines:
        return
    with _lock:
        # O_APPEND: the ranks of a torchrun job append to one record without overwriting each other.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, lines.encode())
        finally:
            os.close(fd)


def _text(value: float | None) -> str | None:
    """A value as recorded: finite values exactly (repr round-trips), the others by their kind."""
    if value is None:
        return None
    if math.isnan(value):
        return "nan"
    # The SQL store keeps +/-inf as the largest finite float (TrackingServiceClient.log_metric's docstring).
    return repr(value) if abs(value) < sys.float_info.max else ("inf" if value > 0 else "-inf")


def _wrap(module: Any, path: str) -> None:
    cls = getattr(module, "TrackingServiceClient", None)
    if cls is None or getattr(cls, "_bakeoff_recorded", False):
        return
    log_metric, log_batch = cls.log_metric, cls.log_batch

    def recorded_log_metric(self, run_id, key, value, timestamp=None, step=None, *args, **kwargs):
        try:
            _append(path, [(run_id, key, step, value)])
        except Exception:  # recording never stops the script's own logging
            pass
        return log_metric(self, run_id, key, value, timestamp, step, *args, **kwargs)

    def recorded_log_batch(self, run_id, metrics=(), *args, **kwargs):
        try:
            _append(path, [(run_id, m.key, m.step, m.value) for m in metrics or ()])
        except Exception:
            pass
        return log_batch(self, run_id, metrics, *args, **kwargs)

    cls.log_metric, cls.log_batch = recorded_log_metric, recorded_log_batch
    cls._bakeoff_recorded = True


class _Finder(importlib.abc.MetaPathFinder):
    """Wraps TARGET's client class once the module has run, whoever imports it first."""

    def __init__(self, path: str):
        self.path = path

    def find_spec(self, fullname, path=None, target=None):
        if fullname != TARGET:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _Loader(spec.loader, self.path)
                return spec
        return None


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: Any, path: str):
        self.inner, self.path = inner, path

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        _wrap(module, self.path)


def install(environ=None) -> bool:
    """In a script's process, before the script runs: record its MLflow writes when the launcher asked."""
    environ = os.environ if environ is None else environ
    path = environ.get(MLFLOW_WRITES_ENV)
    if not path:
        return False
    if TARGET in sys.modules:
        _wrap(sys.modules[TARGET], path)
    elif not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder(path))
    return True


def read_record(path: Path, run_id: str) -> Counter[tuple[str, int, str | None]]:
    """(key, step, value) of each write the script's processes recorded to `run_id`, counted."""
    found: Counter[tuple[str, int, str | None]] = Counter()
    try:
        fh = open(path, "rb")  # noqa: SIM115  (closed below)
    except OSError:
        return found
    with fh:
        read = 0
        for line in fh:
            read += len(line)
            if read > MAX_RECORD_BYTES:
                break
            try:
                run, key, step, value = json.loads(line)
            except (ValueError, TypeError):
                continue
            if run == run_id:
                found[(str(key), int(step), value)] += 1
    return found


def own_values(history: dict[str, list[tuple[int, float]]],
               record: Counter[tuple[str, int, str | None]]) -> tuple[dict[str, list[float]], dict[str, int]]:
    """Split each metric's history (step, value) into what the record accounts for, in order, and a count
    per metric of the values it does not (logged to this run by something other than the script)."""
    left = Counter(record)
    unknown_value = Counter({(k, s): n for (k, s, v), n in record.items() if v is None})
    own: dict[str, list[float]] = {}
    foreign: dict[str, int] = {}
    for key, points in history.items():
        kept = []
        for step, value in points:
            mark = (key, int(step), _text(_value(value)))
            if left[mark] > 0:
                left[mark] -= 1
                kept.append(value)
            elif unknown_value[(key, int(step))] > 0:
                unknown_value[(key, int(step))] -= 1
                kept.append(value)
            else:
                foreign[key] = foreign.get(key, 0) + 1
        if kept:
            own[key] = kept
    return own, foreign
