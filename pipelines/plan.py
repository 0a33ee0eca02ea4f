"""From a spec to the jobs of a bake-off: one per leg x seed, with everything that
is held equal across legs in one place. Pure: used by the local executor and by
the SageMaker compiler alike.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .hashing import digest
from .spec import BakeoffSpec, Leg


def encode_hyperparameters(hps: dict[str, Any]) -> dict[str, str]:
    """CreateTrainingJob carries strings. Like the SageMaker SDK: strings as they are,
    everything else JSON-encoded (the container side decodes both)."""
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in sorted(hps.items())}


@dataclass(frozen=True)
class Batching:
    """How the one global batch is split on a leg: recorded, never guessed."""

    global_batch_size: int
    world_size: int
    per_device_batch_size: int
    gradient_accumulation_steps: int

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def derive_batching(global_batch: int, world_size: int, max_per_device: int | None) -> Batching:
    if global_batch % world_size:
        raise ValueError(f"global batch {global_batch} is not divisible by {world_size} devices")
    per_rank = global_batch // world_size
    accumulation = 1
    if max_per_device:
        accumulation = -(-per_rank // max_per_device)
        while per_rank % accumulation:
            accumulation += 1
    return Batching(global_batch, world_size, per_rank // accumulation, accumulation)


@dataclass
class JobPlan:
    leg: Leg
    seed: int
    hyperparameters: dict[str, Any]
    environment: dict[str, str]
    batching: Batching
    image: str
    name: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def spec_hash(spec: BakeoffSpec) -> str:
    return digest(spec.canonical(), 12)


def training_hyperparameters(spec: BakeoffSpec) -> dict[str, Any]:
    """Hyperparameters every job gets (the fairness contract)."""
    t, o = spec.training, spec.training.optimizer
    hps: dict[str, Any] = {
        "global_batch_size": t.global_batch_size,
        "sequence_length": t.sequence_length,
        "max_steps": t.steps,
        "optimizer": o.name, "lr": o.lr, "weight_decay": o.weight_decay, "beta1": o.beta1, "beta2": o.beta2,
        "warmup_steps": o.warmup_steps, "schedule": o.schedule, "min_lr_ratio": o.min_lr_ratio,
        "grad_clip": o.grad_clip,
        "eval_interval": t.eval_interval, "eval_batches": t.eval_batches, "eval_batch_size": t.eval_batch_size,
        "log_interval": t.log_interval, "checkpoint_interval": t.checkpoint_interval,
        "divergence_factor": t.divergence_factor,
    }
    if spec.entrypoint.builtin:
        hps.update(spec.model.model_dump())
    hps.update(spec.hyperparameters)
    return hps


def leg_environment(spec: BakeoffSpec, leg: Leg) -> dict[str, str]:
    """Container environment for a leg. SageMaker's step cache keys on it, so it holds
    nothing per-execution and nothing about other legs (the spec hash goes in tags)."""
    env = dict(leg.kind.environment(leg.backend, leg.precision))
    env.update(leg.kind.network_environment(leg.instance, leg.instance_count))
    env.update({
        "BAKEOFF_NAME": spec.name,
        "BAKEOFF_LEG": leg.name,
        "BAKEOFF_BACKEND": leg.backend,
        "BAKEOFF_PRECISION": leg.precision,
        "BAKEOFF_INSTANCE_TYPE": leg.instance_type,
    })
    if leg.compile == "torch_compile":
        env["BAKEOFF_TORCH_COMPILE"] = "1"
    env.update(leg.environment)
    return env


def plan_jobs(spec: BakeoffSpec, world_size_of=None) -> list[JobPlan]:
    """All leg x seed jobs. `world_size_of(leg)` overrides the device count
    (the local executor runs every leg as one process)."""
    base = training_hyperparameters(spec)
    jobs = []
    for leg in spec.legs:
        world = world_size_of(leg) if world_size_of else leg.devices
        batching = derive_batching(spec.training.global_batch_size, world,
                                   spec.training.max_per_device_batch_size)
        image = leg.image or leg.kind.default_image(leg.backend, spec.storage.region)
        for seed in spec.seed_list:
            hps = {**base, "seed": seed, "leg": leg.name,
                   "per_device_batch_size": batching.per_device_batch_size,
                   "gradient_accumulation_steps": batching.gradient_accumulation_steps}
            env = leg_environment(spec, leg)
            env["BAKEOFF_NPROC_PER_NODE"] = str(leg.instance.devices if world_size_of is None else 1)
            jobs.append(JobPlan(leg, seed, hps, env, batching, image, name=f"{leg.name}-s{seed}"))
    return jobs


def evaluation_config(spec: BakeoffSpec, *, prices: dict[str, Any], images: dict[str, str | None],
                      emulated_on: dict[str, str | None], cost_basis: str, mlflow: dict[str, Any]) -> dict[str, Any]:
    """What the evaluation step reads: per leg its hardware, seeds and price (with source), and the parity rule.
    One builder for the local executor and the SageMaker compiler."""
    legs = {}
    for leg in spec.legs:
        price = prices.get(leg.name)
        legs[leg.name] = {
            "image": images.get(leg.name), "instance_type": leg.instance_type, "instance_count": leg.instance_count,
            "backend": leg.backend, "precision": leg.precision, "devices": leg.devices, "seeds": spec.seed_list,
            "emulated_on": emulated_on.get(leg.name),
            "price": ({"usd_per_hour": price.usd_per_hour, "source": price.source, "as_of": price.as_of,
                       "note": price.note} if price else None),
        }
    return {"bakeoff": spec.name, "spec_hash": spec_hash(spec), "legs": legs,
            "parity": {**spec.parity.model_dump(), "baseline": spec.baseline},
            "cost_basis": cost_basis, "mlflow": mlflow}
