"""The step line a job prints (`[bakeoff] step=N name=value ...`) and the SageMaker metric
definitions that parse it, generated from the same format: a job's stdout is its metrics on SageMaker,
and the local engine reads the same lines."""
from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

STEP_PREFIX = "[bakeoff]"
# Finite numbers only: a NaN or inf is the job's finding (summary.json), not a metric datapoint.
FINITE_NUMBER = r"([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)"
_STEP_LINE = re.compile(r"^\[bakeoff\] step=(\d+)((?: [A-Za-z0-9_.:/-]+=\S+)*)\s*$")

# SageMaker metric name -> the name=value key on a step line (or a one-off line).
STEP_METRICS = {"train:loss": "train_loss", "train:tokens_per_sec": "tokens_per_sec",
                "train:samples_per_sec": "samples_per_sec", "validation:loss": "val_loss"}
SAY_METRICS = {"time_to_first_step": "time_to_first_step_s"}


def format_value(value: Any) -> str:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if math.isinf(value) else f"{value:.6g}")
    return str(value)


def step_line(step: int, values: Mapping[str, Any]) -> str:
    """`[bakeoff] step=N name=value ...` for the numeric values."""
    printable = " ".join(f"{k}={format_value(v)}" for k, v in values.items()
                         if isinstance(v, (int, float)) and not isinstance(v, bool))
    return f"{STEP_PREFIX} step={step} {printable}".rstrip()


def say_line(values: Mapping[str, Any]) -> str:
    """A one-off `[bakeoff] name=value ...` line (e.g. time to first step)."""
    return f"{STEP_PREFIX} " + " ".join(f"{k}={format_value(v)}" for k, v in values.items())


def parse_step_line(line: str) -> tuple[int, dict[str, str]] | None:
    m = _STEP_LINE.match(line.rstrip("\n"))
    if not m:
        return None
    pairs = dict(item.split("=", 1) for item in m.group(2).split())
    return int(m.group(1)), pairs


def metric_definitions(extra: Mapping[str, str] | None = None) -> list[dict[str, str]]:
    """SageMaker MetricDefinitions (name <= 255, regex <= 500 characters) for the step lines:
    the built-in metrics plus `extra` (SageMaker name -> step-line key)."""
    # `(?:\S+ )*?` skips whole name=value tokens, so `acc` never matches inside `val_acc`.
    out = [{"Name": name, "Regex": r"\[bakeoff\] step=\d+ (?:\S+ )*?" + re.escape(key) + "=" + FINITE_NUMBER}
           for name, key in {**STEP_METRICS, **(extra or {})}.items()]
    out += [{"Name": name, "Regex": r"\[bakeoff\] " + re.escape(key) + "=" + FINITE_NUMBER}
            for name, key in SAY_METRICS.items()]
    return out
