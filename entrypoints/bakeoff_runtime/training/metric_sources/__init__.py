"""Script mode's metric sources: where the launcher finds an unchanged script's metrics, one module each.

Each source pairs a rule in the contract (`bakeoff_runtime.contract.script_mode.METRIC_SOURCE_RULES`: whether
the settings turn it on and which metrics it can give, which `validate` and `bakeoff run` ask before any job
starts) with a reader here (`base.MetricSource`: what it notes before the script starts, one `collect`
after). `SOURCES` is their precedence: the log regexes, then a Trainer's trainer_state.json over them, then
what the script logged to MLflow itself where neither gave a metric.

A new source: its rule in METRIC_SOURCE_RULES (with its switch in ScriptSettings and the spec's ScriptMode),
one module here, and its place in SOURCES.

Torch-free: the launcher's supervising process runs them around the script.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bakeoff_runtime.contract import TrainingEnv
from bakeoff_runtime.contract.script_mode import ScriptSettings
from bakeoff_runtime.training.metric_sources.base import Collected, MetricSource
from bakeoff_runtime.training.metric_sources.log_regexes import LogRegexes
from bakeoff_runtime.training.metric_sources.mlflow_logged import MlflowLogged
from bakeoff_runtime.training.metric_sources.trainer_state import TrainerState

if TYPE_CHECKING:
    from bakeoff_runtime.training.script_launch import PreparedScript

__all__ = ["SOURCES", "Collected", "Found", "MetricSource", "before", "collect"]

SOURCES: tuple[MetricSource, ...] = (LogRegexes(), TrainerState(), MlflowLogged())


@dataclass
class Found:
    """What the job's sources gave, together."""

    series: dict[str, list[float]] = field(default_factory=dict)
    labels: list[str] = field(default_factory=list)  # summary.json's metric_source, in precedence order
    notes: list[str] = field(default_factory=list)


def before(env: TrainingEnv, settings: ScriptSettings,
           sources: tuple[MetricSource, ...] = SOURCES) -> dict[str, Any]:
    """Before the script starts: what each source the spec turned on notes of the job's files, by its name."""
    return {s.name: s.before(env, settings) for s in sources if s.rule.enabled(settings)}


def collect(env: TrainingEnv, settings: ScriptSettings, job: PreparedScript,
            sources: tuple[MetricSource, ...] = SOURCES) -> Found:
    """After the script ends: each source the job reads, in order, its series set over the earlier ones'."""
    found = Found()
    for source in sources:
        if not source.enabled(settings, job):
            continue
        got = source.collect(env, settings, job, found.series)
        found.series.update(got.series)
        if got.label:
            found.labels.append(got.label)
        found.notes.extend(got.notes)
    return found
