"""What the Evaluate step decides with, built in one place: `evaluation_config(plan, record)`.

The plan says what was planned (the legs, their hardware and batching, the seeds, the spec's parity
rule, its sweeps, ablations and decision); the `RunRecord` says what only the engine that runs it
knows: the prices it costs with and where they came from, the MLflow store, where each leg was
emulated, the run's rule (the spec's with the run's parameters), how that rule came to differ from
the one fixed before the data, a round's sequential design, the attempt, the looks taken before, and
how many jobs shared the machine. Each engine makes one record (`compiled_record` for the definition's
config asset, the local engine's in pipelines/local/kinds/evaluate.py) and every reader takes the
config from here: the compiled asset, the local Evaluate step, `--until-decided`'s rounds. The
container side adds only what it alone can know at run time (evaluate.py: the ParityMargin parameter
through `contract.rule.with_margin_parameter`, the MLflow parent key, the Preflight and collective
steps' records)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from bakeoff.estimators.prices import Price, price_for
from bakeoff_runtime.verdict import porting

if TYPE_CHECKING:
    from bakeoff.pipelines.plan.model import Plan
    from bakeoff.pipelines.spec.model import BakeoffSpec
    from bakeoff_runtime.contract.documents import (
        Ablation,
        Attempt,
        DecisionPart,
        DerivedConfig,
        EvaluationConfig,
        LegConfig,
        Looks,
        MlflowConfig,
        ParityRule,
    )

COMPILED_COST_BASIS = "estimate: job wall time x on-demand price (`bakeoff report` uses BillableTimeInSeconds)"
EMULATED_COST_BASIS = ("emulated: local wall time x on-demand price of the instance the leg stands for; "
                       "not indicative of the target hardware")


@dataclass(frozen=True)
class RunRecord:
    """What an engine knows of its run that the plan does not (see the module's docstring)."""

    cost_basis: str                                  # how the cost figures were reached
    prices: Mapping[str, Price | None]               # leg -> the price it is costed at (None: none known)
    mlflow: MlflowConfig                             # the store the evaluation logs the parent run to ({}: none)
    emulated_on: Mapping[str, str] | None = None     # leg -> the device that stood in for its hardware (local)
    rule: Mapping[str, Any] | None = None            # the run's parity rule (local/run_rule.py); None: the spec's
    rule_change: Mapping[str, Any] | None = None     # rule_original or rule_unrecorded, and rule_change_reason
    design: Mapping[str, Any] | None = None          # a round of `--until-decided`: its looks, cap and spending
    attempt: Attempt | None = None                   # this decision's attempt at its question (local)
    jobs_at_once: int = 1                            # training jobs that shared the machine's cores
    looks: Looks | None = None                       # this look and the decisions before it (local)


def compiled_record(plan: Plan, design: Mapping[str, Any] | None = None) -> RunRecord:
    """The record a compiled definition's config asset carries: the bundled (or the spec's) prices, the
    spec's MLflow tracking server, a round's design. The rest is known only when the execution runs."""
    spec = plan.spec
    mlflow: MlflowConfig = {}
    if spec.mlflow.enabled and spec.mlflow.tracking_uri:
        mlflow = {"tracking_uri": spec.mlflow.tracking_uri, "experiment": spec.experiment}
    return RunRecord(cost_basis=COMPILED_COST_BASIS, mlflow=mlflow, design=design,
                     prices={leg.name: price_for(leg.instance_type, leg.price_per_hour) for leg in spec.legs})


def evaluation_config(plan: Plan, record: RunRecord) -> EvaluationConfig:
    """The Evaluate step's config for this plan as this record's engine runs it."""
    spec = plan.spec
    config: EvaluationConfig = {
        "bakeoff": spec.name, "spec_hash": plan.spec_hash, "entrypoint_mode": spec.entrypoint.mode,
        "legs": {leg.name: _leg(plan, leg.name, record) for leg in spec.legs},
        "parity": cast("ParityRule", {**spec.parity.model_dump(), "baseline": spec.baseline, **(record.rule or {})}),
        "cost_basis": record.cost_basis, "mlflow": record.mlflow, **_derived(spec), **_decision(spec)}
    if record.emulated_on is not None:
        config["emulated"] = True
    if record.design is not None:
        config["sequential"] = dict(record.design)
    if record.attempt is not None:
        config["attempt"] = record.attempt
    if record.jobs_at_once > 1:  # the speed figures shared this machine's cores: the report says so
        config["jobs_at_once"] = record.jobs_at_once
    if record.looks is not None:
        config["looks"] = record.looks
    if record.rule_change:
        config.update(cast("EvaluationConfig", dict(record.rule_change)))
    return config


def _leg(plan: Plan, name: str, record: RunRecord) -> LegConfig:
    spec, planned = plan.spec, plan.leg(name)
    leg = spec.leg(name)
    price = record.prices.get(name)
    jobs = plan.jobs_of(name)
    env = jobs[0].environment if jobs else {}
    entry: LegConfig = {
        "image": planned.image, "instance_type": leg.instance_type, "instance_count": leg.instance_count,
        # A script-mode script sets its own precision (autocast or not): bakeoff cannot say which.
        "backend": leg.backend, "precision": leg.precision if spec.entrypoint.mode != "script" else "script's own",
        "devices": leg.devices, "seeds": spec.seed_list,
        "emulated_on": (record.emulated_on or {}).get(name),
        "price": ({"usd_per_hour": price.usd_per_hour, "source": price.source, "as_of": price.as_of,
                   "note": price.note} if price else None),
        # What the spec gives this leg alone: in script mode, all that differs between legs.
        "per_leg": {"arguments": list(leg.arguments), "hyperparameters": dict(leg.hyperparameters),
                    "environment": dict(leg.environment)},
        # The numerics its jobs run with (compiler flags, stochastic rounding), for "what porting cost".
        "numerics_environment": {k: env[k] for k in porting.NUMERICS_ENV if k in env},
        "processes_per_host": planned.processes_per_host,  # "used 1 of 8 devices" beside the cost
    }
    if planned.derived_from:
        entry["derived_from"] = dict(planned.derived_from)
        entry["global_batch_size"] = planned.batching.global_batch_size
    if record.emulated_on is not None:
        entry["local_processes"] = planned.local_processes
        entry["local_processes_why"] = planned.local_processes_why
    return entry


def _decision(spec: BakeoffSpec) -> DecisionPart:
    """The decision the projection reads (absent when the spec declares none)."""
    if spec.decision is None:
        return cast("DecisionPart", {})
    batch = spec.training.global_batch_size if spec.entrypoint.mode != "script" else None
    return {"decision": spec.decision.to_config(measured_batch=batch)}


def _derived(spec: BakeoffSpec) -> DerivedConfig:
    """The scaling sweeps and ablations, for the evaluation (absent when the spec declares none)."""
    from bakeoff.pipelines.spec.derived import ABLATION, derivations, sweeps

    out: DerivedConfig = {}
    groups = sweeps(spec)
    if groups:
        out["scaling"] = {source: {"mode": spec.leg(source).scaling_mode, "legs": names,
                                   "global_batch_size": spec.training.global_batch_size}
                          for source, names in groups.items()}
    ablations: list[Ablation] = [{"leg": d.source, "ablation_leg": d.name, "precision": spec.leg(d.source).precision,
                                  "ablation_precision": spec.leg(d.name).precision}
                                 for d in derivations(spec).values() if d.kind == ABLATION]
    if ablations:
        out["ablations"] = ablations
    return out
