"""The margin the verdict decides with where the pipeline's ParityMargin parameter sets one: both sides
apply it the same way. The host resolves the run's rule from the parameters before any job starts
(pipelines/local/run_rule.py, so the doomed-leg watch judges by it and the Evaluate step's config
carries it); on SageMaker the parameter reaches the Evaluate step as its `--margin` argument and
evaluate.py applies it here, the spec's rule kept beside it as the rule fixed before the data."""
from __future__ import annotations

import copy
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from bakeoff_runtime.contract.documents import JSON, EvaluationConfig

MARGIN_PARAMETER = "ParityMargin"  # the pipeline parameter (sagemaker/compiler.py, steps/evaluate.py)
MARGIN_PARAMETER_REASON = f"{MARGIN_PARAMETER} pipeline parameter set at execution start"


def with_margin_parameter(config: EvaluationConfig, margin: float | None) -> EvaluationConfig:
    """`config` deciding with `margin` (the ParityMargin parameter's value; None: none was given). Where it
    differs from the config's, the evaluation shows the config's rule beside the one it decided with
    (a rule already recorded as changed keeps its own original and reason)."""
    if margin is None or margin == config["parity"]["margin"]:
        return config
    out = copy.deepcopy(config)
    out.setdefault("rule_original", cast("JSON", dict(config["parity"])))
    out.setdefault("rule_change_reason", MARGIN_PARAMETER_REASON)
    out["parity"]["margin"] = margin
    return out
