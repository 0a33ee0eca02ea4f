"""`entrypoint.script_mode`: how bakeoff runs a training script as it is (no bakeoff_runtime).

The one place these settings are declared; `settings()` turns them into the typed value the
launcher reads inside the container (bakeoff_runtime.contract.script_mode.ScriptSettings).
"""
from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# botocore's sagemaker model: MetricDefinition Name 1-255, Regex 1-500 characters;
# AlgorithmSpecification.MetricDefinitions at most 40.
MAX_METRIC_NAME = 255
MAX_METRIC_REGEX = 500
MAX_METRIC_DEFINITIONS = 40


def nested_repeat(pattern: str) -> str | None:
    """The part of `pattern` where a repeat that can match more than once holds another unbounded repeat
    (`(a+)+`, `(\\d*\\.?\\d*)+`): the shape that makes Python's backtracking `re` exponential. None when
    there is none. Read from the parsed pattern (re's own parser), never by running it."""
    import importlib

    # The stdlib's sre parser: re._parser from Python 3.11, sre_parse before.
    parser = importlib.import_module("re._parser" if hasattr(re, "_parser") else "sre_parse")
    repeats = {parser.MAX_REPEAT, parser.MIN_REPEAT, getattr(parser, "POSSESSIVE_REPEAT", None)}

    def unbounded_inside(items) -> bool:
        for op, av in items:
            if op in repeats and av[1] == parser.MAXREPEAT:
                return True
            for sub in _children(op, av):
                if unbounded_inside(sub):
                    return True
        return False

    def _children(op, av):
        if op in repeats:
            return [av[2]]
        if op is parser.SUBPATTERN:
            return [av[3]]
        if op is parser.BRANCH:
            return list(av[1])
        if op in (parser.ASSERT, parser.ASSERT_NOT):
            return [av[1]]
        return []

    def walk(items) -> bool:
        for op, av in items:
            if op in repeats and av[1] > 1 and unbounded_inside(av[2]):
                return True
            if any(walk(sub) for sub in _children(op, av)):
                return True
        return False

    try:
        return pattern if walk(parser.parse(pattern)) else None
    except Exception:  # noqa: BLE001  (re.compile accepted it; an unreadable parse tree is no finding)
        return None


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


class MetricRegex(_Model):
    """One metric read from what the script prints, in SageMaker's MetricDefinitions form."""

    name: str = Field(..., min_length=1, max_length=MAX_METRIC_NAME, description="The metric's name, as the "
                      "verdict (parity.metric) and SageMaker's metric definitions call it, e.g. `val_loss`.")
    regex: str = Field(..., min_length=1, max_length=MAX_METRIC_REGEX, description="A regular expression over "
                       "each line of the job's output; its first group is the value, e.g. "
                       r"`Test set: Average loss: ([0-9.]+)`.")

    @field_validator("regex")
    @classmethod
    def _one_group(cls, v: str) -> str:
        try:
            compiled = re.compile(v)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        if compiled.groups < 1:
            raise ValueError("the regex needs a group around the value, e.g. `loss: ([0-9.eE+-]+)`")
        nested = nested_repeat(v)
        if nested:
            raise ValueError(f"{nested}: a repeat inside a repeat can take time exponential in a line's length "
                             "(one long output line would stall the job); write it without the nesting, e.g. "
                             "`([0-9.eE+-]+)`")
        return v


class SeedDelivery(_Model):
    """How the job's seed reaches the script. bakeoff also seeds Python, NumPy and torch before the
    script starts, so a script that takes no seed still differs from seed to seed."""

    argument: str | None = Field(None, description="The hyperparameter (command-line option) that carries the "
                                 "seed, e.g. `seed` for `--seed 3`.")
    environment: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", description="Or the environment "
                                    "variable, e.g. `SEED`.")


class ScriptMode(_Model):
    """An existing script, run unchanged: how its arguments, metrics, seed and throughput work."""

    argument_style: Literal["space", "equals"] = Field(
        "space", description="How hyperparameters become arguments: `space` (`--key value`, as SageMaker passes "
        "them) or `equals` (`--key=value`, for scripts with a nanoGPT-style configurator).")
    metrics: list[MetricRegex] = Field(default_factory=list, max_length=MAX_METRIC_DEFINITIONS - 6,
                                       description="Metrics read from the script's output by regex; the same list "
                                       "becomes the pipeline's metric definitions.")
    hf_trainer_state: bool = Field(False, description="Also read a Hugging Face Trainer's `trainer_state.json` "
                                   "(`log_history`: `loss` is the training loss, `eval_loss` and the other "
                                   "metrics keep their names); call `trainer.save_state()` at the end.")
    metrics_from_mlflow: bool = Field(False, description="The script logs metrics to MLflow itself (it is pointed at "
                                      "the job's child run through MLFLOW_RUN_ID): take the ones the regexes do "
                                      "not give from there, the parity metric included. Needs MLflow on.")
    loss_metric: str = Field("train_loss", description="Which metric is the training loss (its first value is "
                             "compared across legs for the same-model check).")
    seed: SeedDelivery = Field(default_factory=SeedDelivery, description="How the seed reaches the script.")
    unit: Literal["samples", "tokens"] = Field("samples", description="What throughput counts.")
    units_per_step: float | None = Field(None, gt=0, description="Samples (or tokens) one optimizer step "
                                         "processes over all devices: the global batch (x sequence length for "
                                         "tokens). Without it only step times are measured.")
    warmup_steps: int = Field(5, ge=1, le=100_000, description="Optimizer steps left out of the steady state "
                              "(graph compilation, allocator warm-up).")
    sync_interval: int = Field(10, ge=1, le=100_000, description="Every this many optimizer steps the step hook "
                               "waits for the device and logs a step time.")
    install_requirements: bool = Field(True, description="Install `requirements.txt` beside the script before it "
                                       "starts (SageMaker jobs; a local run checks this Python has it instead).")
    distributed: bool | None = Field(None, description="Whether the script runs as one process per device, started "
                                     "by torchrun (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set), as "
                                     "SageMaker starts it with `distribution={\"torch_distributed\": {\"enabled\": "
                                     "true}}`; false: one process per instance, as SageMaker runs a script with no "
                                     "distribution. Default: detected from the script (it initialises a process "
                                     "group or reads torchrun's variables, and starts no processes of its own); "
                                     "`validate` says which and why.")

    @model_validator(mode="after")
    def _names(self):
        names = [m.name for m in self.metrics]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"metric names must be unique: {', '.join(dup)} appears twice")
        return self

    def settings(self, parity_metric: str, distributed: bool = False) -> Any:
        """The launcher's settings; `distributed`: the script's process model as resolved from this
        field or, unset, from the script (pipelines/plan/script_scan.py)."""
        from bakeoff_runtime.contract import script_mode as contract

        return contract.ScriptSettings(distributed=distributed,
            argument_style=self.argument_style,
            metrics=tuple(contract.MetricRegex(m.name, m.regex) for m in self.metrics),
            loss_metric=self.loss_metric, parity_metric=parity_metric,
            seed_argument=self.seed.argument, seed_environment=self.seed.environment, unit=self.unit,
            units_per_step=self.units_per_step, hf_trainer_state=self.hf_trainer_state,
            metrics_from_mlflow=self.metrics_from_mlflow, warmup_steps=self.warmup_steps,
            sync_interval=self.sync_interval)
