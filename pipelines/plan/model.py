"""From a spec to the plan of a bake-off: a frozen value built once and used by
`validate`, the SageMaker compiler and the local executor alike.

The plan holds what is held equal across legs (the fairness contract), one job per leg
x seed with its step name, script, processes per host, hyperparameters and environment,
the batching on the target hardware and on this machine, and the code bundle's hash.
`plan.json` in a run directory is its serialisation.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from bakeoff.pipelines.hashing import digest
from bakeoff.pipelines.names import job_name, step_name
from bakeoff.pipelines.plan.bundle import Bundle, bundle_for
from bakeoff.pipelines.plan.emulation import gpu_available
from bakeoff.pipelines.spec.model import BakeoffSpec, Leg
from bakeoff_runtime import contract
from bakeoff_runtime.contract import script_mode as script_contract

if TYPE_CHECKING:
    from bakeoff.pipelines.plan.script_checks import ScriptFindings


def encode_hyperparameters(hps: Mapping[str, Any]) -> dict[str, str]:
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


def _frozen(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(sorted(mapping.items())))


@dataclass(frozen=True)
class PlannedLeg:
    name: str
    instance_type: str
    instance_count: int
    backend: str
    precision: str
    devices: int
    processes_per_host: int
    image: str | None  # None: no published image (the spec refuses that unless `image:` is given)
    batching: Batching  # on the target hardware
    local_batching: Batching  # on this machine (its world size: the processes that run there)
    derived_from: Mapping[str, Any] | None = None  # a scaling size or ablation: scaling.Derivation.to_json()
    local_processes_why: str = "one process (global batch kept)"

    @property
    def local_processes(self) -> int:
        return self.local_batching.world_size

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "instance_type": self.instance_type, "instance_count": self.instance_count,
                "backend": self.backend, "precision": self.precision, "devices": self.devices,
                "processes_per_host": self.processes_per_host, "image": self.image,
                "batching": {"target": self.batching.as_dict(), "local": self.local_batching.as_dict()},
                "derived_from": dict(self.derived_from) if self.derived_from else None,
                "local_processes": self.local_processes, "local_processes_why": self.local_processes_why}


@dataclass(frozen=True)
class PlannedJob:
    leg: str
    seed: int
    name: str  # the job's directory locally, its MLflow run name: "trn1-s0"
    step_name: str  # its pipeline step: "Train-trn1-s0"
    script: str
    hyperparameters: Mapping[str, Any]
    environment: Mapping[str, str]

    def to_json(self) -> dict[str, Any]:
        return {"leg": self.leg, "seed": self.seed, "name": self.name, "step_name": self.step_name,
                "script": self.script, "hyperparameters": dict(self.hyperparameters),
                "environment": dict(self.environment)}


@dataclass(frozen=True)
class Plan:
    spec: BakeoffSpec
    spec_hash: str
    bundle: Bundle
    legs: tuple[PlannedLeg, ...]
    jobs: tuple[PlannedJob, ...]
    # Script mode: the script's process model and what `validate` (and the start of `bakeoff run`) says
    # of it (pipelines/plan/script_checks.py); None for a Runtime script.
    script: ScriptFindings | None = None

    @property
    def notes(self) -> list[str]:
        """What is said before anything runs: the bundle's notes, the packages jobs in the spec's subnets
        install, and the script's warnings."""
        from bakeoff.pipelines.plan.packages import subnet_note

        installs = subnet_note(self.spec, self.bundle)
        return self.bundle.notes() + ([installs] if installs else []) + list(self.script.warnings if self.script
                                                                               else ())

    def leg(self, name: str) -> PlannedLeg:
        return next(leg for leg in self.legs if leg.name == name)

    def jobs_of(self, leg: str) -> list[PlannedJob]:
        return [j for j in self.jobs if j.leg == leg]

    @property
    def seed_major(self) -> list[PlannedJob]:
        """Seed by seed, every leg: an interrupted run still has every leg represented."""
        legs = [leg.name for leg in self.legs]
        seeds = self.spec.seed_list
        return sorted(self.jobs, key=lambda j: (seeds.index(j.seed), legs.index(j.leg)))

    def to_json(self) -> dict[str, Any]:
        return {"schema": contract.PLAN_SCHEMA, "bakeoff": self.spec.name,
                "spec_hash": self.spec_hash, "code_sha256": self.bundle.sha256, "script": self.bundle.script,
                "parity_rule": self.spec.parity_rule(), "legs": {leg.name: leg.to_json() for leg in self.legs},
                "jobs": [job.to_json() for job in self.jobs]}


def spec_hash(spec: BakeoffSpec) -> str:
    """The hash of the spec as declared (an expanded spec hashes as the spec it came from)."""
    from bakeoff.pipelines.spec.derived import declared

    return digest(declared(spec).canonical(), 12)


def checkpoint_interval(spec: BakeoffSpec) -> int:
    """The spec's interval; when it is 0 and a leg uses managed spot, a tenth of the run: SageMaker
    restores /opt/ml/checkpoints to a restarted spot job but syncs only what the job wrote there
    (docs.aws.amazon.com/sagemaker/latest/dg/model-checkpoints-resume.html: "the checkpoints from this S3
    bucket are restored to checkpoint_local_path"), so a spot job that writes none
    starts over from step 0. The same on every leg (it is part of the fairness contract, and
    graph-neutral for the compile cache)."""
    t = spec.training
    if t.checkpoint_interval or not any(leg.managed_spot for leg in spec.legs):
        return t.checkpoint_interval
    return max(1, t.steps // 10)


def training_hyperparameters(spec: BakeoffSpec) -> dict[str, Any]:
    """Hyperparameters every job gets (the fairness contract). In script mode only the spec's
    own `hyperparameters:`: each becomes an argument of the script, as on SageMaker."""
    if spec.entrypoint.mode == "script":
        return dict(spec.hyperparameters)
    t, o = spec.training, spec.training.optimizer
    hps: dict[str, Any] = {
        "global_batch_size": t.global_batch_size,
        "sequence_length": t.sequence_length,
        "max_steps": t.steps,
        "optimizer": o.name, "lr": o.lr, "weight_decay": o.weight_decay, "beta1": o.beta1, "beta2": o.beta2,
        "warmup_steps": o.warmup_steps, "schedule": o.schedule, "min_lr_ratio": o.min_lr_ratio,
        "grad_clip": o.grad_clip,
        "eval_interval": t.eval_interval, "eval_batches": t.eval_batches, "eval_batch_size": t.eval_batch_size,
        "log_interval": t.log_interval, "checkpoint_interval": checkpoint_interval(spec),
        "divergence_factor": t.divergence_factor,
    }
    if spec.entrypoint.builtin:
        hps.update(spec.model.model_dump())
    hps.update(spec.hyperparameters)
    return hps


def script_job_hyperparameters(spec: BakeoffSpec, leg: Leg, seed: int, base: dict[str, Any]) -> dict[str, Any]:
    """A script-mode job's hyperparameters: the script's (the spec's, the leg's over them, the
    seed where the script takes it as an argument) and bakeoff's own two, whose `bakeoff_`
    prefix keeps them off the script's command line (as `sagemaker_` keeps the SDK's off it)."""
    hps = {**base, **leg.hyperparameters}
    argument = spec.entrypoint.script_mode.seed.argument
    if argument:
        hps[argument] = seed
    hps[script_contract.LEG_HP] = leg.name
    hps[script_contract.SEED_HP] = seed
    return hps


def leg_environment(spec: BakeoffSpec, leg: Leg, processes_per_host: int | None = None) -> dict[str, str]:
    """Container environment for a leg. SageMaker's step cache keys on it, so it holds
    nothing per-execution and nothing about other legs (the spec hash goes in tags).
    `processes_per_host`: the workers a job starts on each instance (default: one per device)."""
    JobEnvironment = contract.JobEnvironment
    env = dict(leg.kind.environment(leg.backend_name, leg.precision))
    env.update(leg.kind.network_environment(leg.instance, leg.instance_count))
    nproc = leg.instance.devices if processes_per_host is None else processes_per_host
    env.update(JobEnvironment(name=spec.name, leg=leg.name, backend=leg.backend_name, precision=leg.precision,
                              instance_type=leg.instance_type, nproc_per_node=nproc,
                              torch_compile=leg.compile == "torch_compile").to_environ())
    env.update(leg.environment)
    return env


def _check_packages(spec: BakeoffSpec, bundle: Bundle) -> None:
    from bakeoff.pipelines.errors import SpecError
    from bakeoff.pipelines.plan import packages
    from bakeoff.pipelines.spec.loader import locate

    try:
        packages.check(spec, bundle)
    except SpecError as exc:
        i = int((exc.field or "legs.0").split(".")[1])
        file, line = locate(spec, ("legs", i))
        raise SpecError(exc.message, file=file, line=line, field=exc.field) from None


def _image(spec: BakeoffSpec, leg: Leg) -> str | None:
    if leg.image:
        return leg.image
    from bakeoff.estimators.images import NoDefaultImage

    try:
        return leg.kind.default_image(leg.backend_name, spec.storage.region)
    except NoDefaultImage:
        return None


def build_plan(spec: BakeoffSpec, base_dir: Path | None = None, bundle: Bundle | None = None,
               local_gpu: bool | None = None) -> Plan:
    """The plan of `spec` (with the legs its scaling sweeps and ablations derive), its code bundle
    read from `base_dir` (default: the spec file's folder) unless the bundle is given (one already
    uploaded). `local_gpu`: whether this machine's runs use a GPU (default: detected)."""
    from bakeoff.pipelines.spec.derived import derivations, expand, local_processes
    from bakeoff.pipelines.spec.loader import spec_base_dir

    spec = expand(spec)
    derived = derivations(spec)
    if local_gpu is None:
        local_gpu = gpu_available()
    bundle = bundle or bundle_for(spec, base_dir or spec_base_dir(spec))
    _check_packages(spec, bundle)
    script = None
    if spec.entrypoint.mode == "script":
        from bakeoff.pipelines.plan.script_checks import findings

        script = findings(spec, bundle, local_gpu)  # its refusals are raised here, before anything runs
    base = training_hyperparameters(spec)
    t = spec.training
    legs, jobs = [], []
    for leg in spec.legs:
        d = derived.get(leg.name)
        global_batch = d.global_batch_size if d else t.global_batch_size
        emulation = leg.kind.local_emulation(leg.backend_name, local_gpu).backend
        if script is not None:
            per_host, processes, why = script_processes(leg, script.distributed, emulation)
            target = Batching(global_batch, per_host * leg.instance_count, 0, 1)  # the script batches itself
            local = Batching(global_batch, processes, 0, 1)
        else:
            per_host = leg.instance.devices
            target = derive_batching(global_batch, leg.devices, t.max_per_device_batch_size)
            processes, why = local_processes(spec, leg.name, leg.devices, global_batch, emulation)
            local = derive_batching(global_batch, processes, t.max_per_device_batch_size)
        legs.append(PlannedLeg(leg.name, leg.instance_type, leg.instance_count, leg.backend_name, leg.precision,
                               leg.devices, per_host, _image(spec, leg), target, local,
                               _frozen(d.to_json()) if d else None, why))
        env = _frozen(leg_environment(spec, leg, per_host))
        for seed in spec.seed_list:
            if spec.entrypoint.mode == "script":
                hps = script_job_hyperparameters(spec, leg, seed, base)
            else:
                hps = {**base, **leg.hyperparameters, "seed": seed, "leg": leg.name,
                       "per_device_batch_size": target.per_device_batch_size,
                       "gradient_accumulation_steps": target.gradient_accumulation_steps,
                       "global_batch_size": global_batch}
            jobs.append(PlannedJob(leg.name, seed, job_name(leg.name, seed), step_name(leg.name, seed),
                                   bundle.script, _frozen(hps), env))
    return Plan(spec, spec_hash(spec), bundle, tuple(legs), tuple(jobs), script)


def script_processes(leg: Leg, distributed: bool, emulation: str) -> tuple[int, int, str]:
    """A script-mode leg's (processes per instance on SageMaker, processes here, why): one unless the script
    is distributed, then one per device there and, here, as many as the leg's local emulation runs
    collectives across (XLA's CPU client runs none across processes: one)."""
    from bakeoff.pipelines.spec.derived import machine_processes
    from bakeoff_runtime.contract.backend_table import row

    devices = leg.instance.devices
    if not distributed:
        return 1, 1, "one process (the script is not distributed)"
    emulated = row(emulation)
    if devices <= 1:
        return devices, 1, "one process under torchrun (one device)"
    if not emulated.local_multi_process:
        return devices, 1, emulated.local_one_process_why.format(devices=devices).replace(" (global batch kept)", "")
    n = min(devices, machine_processes())
    return devices, n, f"{n} torchrun process{'es' if n > 1 else ''} stand for the {devices} devices" + (
        "" if n == devices else " (as many as this machine takes)")
