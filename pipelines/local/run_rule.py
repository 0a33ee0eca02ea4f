"""The run's parity rule, resolved once: the spec's `parity` with the pipeline parameters the run
was started with (`--param ParityMargin=...`) applied. The local engine resolves it when it reads
the run's parameters (`LocalExecutor._prepare`, or the recorded ones when `bakeoff report DIR`
decides again) and every reader of the run takes it from there: the rule record
(parity-rule.json, plan.json), the doomed-leg watch (doomed.py), the first seed's metric check
and the Evaluate step's config (kinds/evaluate.py), so the report, the MLflow parent
run and the sequential design's records, which read the evaluation, see the same rule.

On SageMaker the parameter reaches the Evaluate step as its `--margin` argument and evaluate.py
applies it there (the same override, for the same parameter)."""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from bakeoff_runtime.contract.rule import MARGIN_PARAMETER  # the pipeline parameter that sets the margin


@dataclass(frozen=True)
class Rule:
    """What decides the verdict (the keys of `BakeoffSpec.parity_rule()`)."""

    metric: str
    direction: str
    margin: float
    margin_type: str
    alpha: float
    test: str
    baseline: str

    def as_dict(self) -> dict[str, Any]:
        """The rule as parity-rule.json and the evaluation's rule record hold it."""
        return asdict(self)

    @property
    def absolute_margin(self) -> float | None:
        """The margin in metric units, or None where it is relative to the baseline's mean."""
        return self.margin if self.margin_type == "absolute" else None


def resolved_rule(spec: Any, parameters: Mapping[str, Any] | None = None) -> Rule:
    """The rule of a run of `spec` started with these pipeline parameters (raw `--param` text or the
    definition's typed values; a parameter left out, or None, keeps the spec's value). Raises
    ValueError for a margin that is no positive finite number (the spec's own check)."""
    rule = dict(spec.parity_rule())
    value = (parameters or {}).get(MARGIN_PARAMETER)
    if value is not None:
        try:
            margin = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{MARGIN_PARAMETER}={value!r} is not a number") from None
        if not (math.isfinite(margin) and margin > 0):
            raise ValueError(f"{MARGIN_PARAMETER}={value!r}: the margin must be a positive number; parity is "
                             "decided within +/- margin")
        rule["margin"] = margin
    return Rule(metric=str(rule["metric"]), direction=str(rule["direction"]), margin=float(rule["margin"]),
                margin_type=str(rule["margin_type"]), alpha=float(rule["alpha"]), test=str(rule["test"]),
                baseline=str(rule["baseline"]))
