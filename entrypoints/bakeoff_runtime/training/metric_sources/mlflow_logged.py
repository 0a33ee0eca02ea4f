"""What the script logged to the job's MLflow run itself (`metrics_from_mlflow: true` lets the verdict count on
it): only the values its own processes recorded logging (tracking/script_writes.py), and only for metrics
the sources before it did not give. Values another process wrote into the run are left out and named.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from bakeoff_runtime.contract import TrainingEnv
from bakeoff_runtime.contract.script_mode import ScriptSettings
from bakeoff_runtime.training.metric_sources.base import Collected, MetricSource, rule_named

if TYPE_CHECKING:
    from bakeoff_runtime.training.script_launch import PreparedScript


class MlflowLogged(MetricSource):
    rule = rule_named("mlflow")

    def enabled(self, settings: ScriptSettings, job: PreparedScript) -> bool:
        # Read wherever the job has a run, the flag or not: the flag is what lets `validate` count on it for
        # the parity metric; the script's other metrics sit in summary.json either way, and a run that holds
        # values the script did not log is named either way.
        return job.mlflow is not None

    def collect(self, env: TrainingEnv, settings: ScriptSettings, job: PreparedScript,
                found: Mapping[str, list[float]]) -> Collected:
        run = job.mlflow
        if run is None:
            return Collected()
        own = {k: v for k, v in run.logged_by_script().items() if k not in found}
        label = "the script's own MLflow logging (" + ", ".join(sorted(own)) + ")" if own else None
        return Collected(own, label=label, notes=(run.foreign_note(),) if run.foreign else ())
