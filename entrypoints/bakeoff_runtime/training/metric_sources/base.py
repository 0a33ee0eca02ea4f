"""What a metric source of script mode is to the launcher: its rule (the contract's half, which `validate`
asks too), what it notes before the script starts, and one `collect` after it ends.

Torch-free: the launcher's supervising process reads the sources around the script.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bakeoff_runtime.contract import TrainingEnv
from bakeoff_runtime.contract.script_mode import METRIC_SOURCE_RULES, MetricSourceRule, ScriptSettings

if TYPE_CHECKING:  # script_launch imports the sources: the job's type only annotates here
    from bakeoff_runtime.training.script_launch import PreparedScript


@dataclass(frozen=True)
class Collected:
    """What one source found in a finished job."""

    series: dict[str, list[float]] = field(default_factory=dict)  # set over what earlier sources found
    label: str | None = None  # how summary.json's metric_source names it; None: nothing worth naming
    notes: tuple[str, ...] = ()  # for summary.json's notes


def rule_named(name: str) -> MetricSourceRule:
    """The contract's rule of the source `name`: a reader and its rule are paired by name."""
    return next(rule for rule in METRIC_SOURCE_RULES if rule.name == name)


class MetricSource:
    """One source. A subclass sets `rule` and writes `collect`; `before` and `enabled` have defaults."""

    rule: MetricSourceRule

    @property
    def name(self) -> str:
        return self.rule.name

    def enabled(self, settings: ScriptSettings, job: PreparedScript) -> bool:
        """Whether this job reads the source: by default, whether the spec turned it on."""
        return self.rule.enabled(settings)

    def before(self, env: TrainingEnv, settings: ScriptSettings) -> Any:
        """What the source must know of the job's files before the script starts (kept in the job's
        `before` under its name); called only where the spec turned it on."""
        return None

    def collect(self, env: TrainingEnv, settings: ScriptSettings, job: PreparedScript,
                found: Mapping[str, list[float]]) -> Collected:
        """What the job left for this source. `found`: what the sources before it gave; the source decides
        whether it overrides a metric of theirs (return it in `series`) or only fills the gaps."""
        raise NotImplementedError
