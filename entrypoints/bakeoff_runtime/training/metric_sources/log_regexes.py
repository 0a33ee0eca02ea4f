"""The spec's metric regexes over every line the script printed (SageMaker's MetricDefinitions).

The lines are read while the script runs (`script_metrics.LogMetrics`, fed by the launcher, which also
writes each match to metrics.jsonl and MLflow); what is left to collect is each metric's first and last value.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from bakeoff_runtime.contract import TrainingEnv
from bakeoff_runtime.contract.script_mode import ScriptSettings
from bakeoff_runtime.training.metric_sources.base import Collected, MetricSource, rule_named

if TYPE_CHECKING:
    from bakeoff_runtime.training.script_launch import PreparedScript


class LogRegexes(MetricSource):
    rule = rule_named("log_regexes")

    def collect(self, env: TrainingEnv, settings: ScriptSettings, job: PreparedScript,
                found: Mapping[str, list[float]]) -> Collected:
        # Named whenever regexes are declared, matched or not: metric_source says where bakeoff looked.
        return Collected(dict(job.metrics.series), label="log regexes")
