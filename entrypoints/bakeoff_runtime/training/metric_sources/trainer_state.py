"""A Hugging Face Trainer's `trainer_state.json` (`hf_trainer_state: true`): its `log_history`, with real step
numbers, from the newest such file the job wrote (`script_metrics.trainer_state` reads it). Its metrics
override the regexes' of the same name, and every value goes to metrics.jsonl after the regexes' records.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bakeoff_runtime.contract import TrainingEnv
from bakeoff_runtime.contract.script_mode import ScriptSettings
from bakeoff_runtime.training.metric_sources.base import Collected, MetricSource, rule_named
from bakeoff_runtime.training.script_metrics import find_trainer_state, trainer_state, trainer_state_snapshot

if TYPE_CHECKING:
    from bakeoff_runtime.training.script_launch import PreparedScript

NOT_SAVED = "no trainer_state.json was written (call trainer.save_state() at the end)"


def state_roots(env: TrainingEnv) -> list[Path]:
    """Where a Trainer's output_dir can be: the job's folders, and the working directory for a relative one."""
    return [env.model_dir, env.output_data_dir, env.checkpoint_dir, Path.cwd()]


class TrainerState(MetricSource):
    rule = rule_named("trainer_state")

    def before(self, env: TrainingEnv, settings: ScriptSettings) -> Any:
        # The files already there (a checkpoint channel, an earlier attempt): the job's is one new or changed.
        return trainer_state_snapshot(state_roots(env))

    def collect(self, env: TrainingEnv, settings: ScriptSettings, job: PreparedScript,
                found: Mapping[str, list[float]]) -> Collected:
        path = find_trainer_state(state_roots(env), job.before.get(self.name) or {})
        if path is None:
            return Collected(notes=(NOT_SAVED,))
        series, records = trainer_state(path, settings.loss_metric)
        with open(env.model_dir / "metrics.jsonl", "a") as fh:
            for record in records:
                fh.write(json.dumps(record) + "\n")
        return Collected(series, label=f"{path.name} ({path.parent.name}/)")
