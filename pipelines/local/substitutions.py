"""What differs when this machine runs a compiled pipeline instead of SageMaker: one
explicit list, applied to the very requests `bakeoff synth` writes, and printed at the
start of every local run.

Everything not listed here is the request as compiled: hyperparameters, environment,
channels, the container command, the stopping condition, the Evaluate step's arguments
and the gate's conditions.
"""
from __future__ import annotations

import dataclasses
import json
import platform
import sys
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from bakeoff.pipelines.plan.model import Plan
from bakeoff_runtime import contract
from bakeoff_runtime.contract import script_mode as script_contract
from bakeoff_runtime.contract.documents import MlflowConfig

from .store import LocalS3

OPT_ML = "/opt/ml"
LOCAL_HOST_ADDRESS = "127.0.0.1"
# Variables of this shell that would leak into a job and change what it does.
_HOST_PREFIXES = ("SM_", contract.ENV_PREFIX, "PJRT_", "MLFLOW_", "NEURON_", "XLA_", "FI_", "RDMAV_", "NCCL_", "RANK",
                  "LOCAL_RANK", "WORLD_SIZE", "MASTER_")


def local_runtime() -> dict[str, str]:
    """What stands in for the image: this Python and its torch (part of every job's cache key)."""
    out = {"python": platform.python_version()}
    for dist in ("torch", "torch-xla"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            pass
    return out


@dataclass(frozen=True)
class LocalTrainingJob:
    """A CreateTrainingJob request as this machine runs it."""

    step_name: str
    name: str  # the job's directory under RUN/jobs, e.g. trn1-s0
    leg: str
    seed: int
    request: dict[str, Any]  # the compiled request, expressions resolved
    hyperparameters: dict[str, str]
    environment: dict[str, str]
    hosts: tuple[str, ...]
    channels: dict[str, str]  # channel -> S3 URI (in the local store)
    command: tuple[str, ...]
    max_runtime_s: int
    output_path: str  # OutputDataConfig.S3OutputPath
    emulated_on: str


@dataclass(frozen=True)
class LocalProcessingJob:
    """A CreateProcessingJob request (the Evaluate step) as this machine runs it."""

    request: dict[str, Any]
    environment: dict[str, str]
    command: tuple[str, ...]
    inputs: dict[str, tuple[str, Path]]  # input name -> (S3 URI, local path)
    outputs: dict[str, tuple[Path, str]]  # output name -> (local path, S3 URI)
    max_runtime_s: int


class Substitutions:
    def __init__(self, plan: Plan, run_dir: Path, store: LocalS3, *, python: str | None = None,
                 gpu: bool = False, mlflow: dict[str, str] | None = None, hosts: int = 1):
        self.plan = plan
        self.run_dir = Path(run_dir)
        self.store = store
        self.python = python or sys.executable
        self.gpu = gpu
        self.mlflow = mlflow or {}
        self.hosts = hosts
        self.emulation = {leg.name: leg.kind.local_emulation(leg.backend_name, gpu) for leg in plan.spec.legs}

    def steering(self, leg: str) -> dict[str, str]:
        """What tells a leg's script where it runs here, in the ways scripts and their frameworks listen:
        this Python has torch_xla (AWS's GPU and CPU images do not), and transformers and accelerate pick
        PyTorch/XLA wherever it imports unless USE_TORCH_XLA is off (transformers utils/import_utils.py,
        accelerate utils/imports.py); a GPU this machine has is hidden from a leg that does not run on it
        (CUDA_VISIBLE_DEVICES empty: no device is visible to CUDA, NVIDIA's CUDA environment variables)."""
        from bakeoff_runtime.contract.backend_table import row

        emu = self.emulation[leg]
        out = {}
        if row(emu.backend).torch_device != "xla":
            out["USE_TORCH_XLA"] = "0"
        if emu.backend != "cuda":
            out["CUDA_VISIBLE_DEVICES"] = ""
        return out

    # --- the list, as printed -------------------------------------------------------------
    def gist(self) -> str:
        """One line before the bars: where each leg runs here. brief() (`bakeoff run -v`) and
        substitutions.json say the rest; eight lines wrapped to sixteen rows pushed the bars off a screen."""
        legs = ", ".join(f"{leg.name} on {self.emulation[leg.name].device_label}"
                         + (f" x{leg.local_processes}" if leg.local_processes > 1 else "") for leg in self.plan.legs)
        script = " (script mode)" if self.plan.script is not None else ""
        return f"{legs}{script} (-v: every substitution)"

    def brief(self) -> list[str]:
        """What a person at the terminal needs before the bars: what each leg runs on here, and its own
        `local:` block (describe() has every substitution; the run directory keeps them in substitutions.json)."""
        lines = []
        for leg in self.plan.legs:
            emu = self.emulation[leg.name]
            # The variables that steer the script here are said: they change what it does.
            extra = ", ".join(f"{k}={v}" if v else f'{k}=""'
                              for k, v in {**emu.environment, **self.steering(leg.name)}.items())
            line = (f"leg {leg.name}: {leg.instance_count} x {leg.instance_type} ({leg.backend}) -> "
                    f"{leg.local_processes} process{'es' if leg.local_processes > 1 else ''} on {emu.device_label}"
                    + (f" ({extra})" if extra else ""))
            own = self.plan.spec.leg(leg.name).local
            if own is not None and (own.arguments or own.environment):
                given = [f"arguments {' '.join(own.arguments)}"] if own.arguments else []
                given += [f"{k}={v}" for k, v in own.environment.items()]
                line += f"; its local: block (this machine only, not deployed): {', '.join(given)}"
            lines.append(line)
        if self.plan.script is not None:  # how the brought script is started: one process, or torchrun
            lines.append(f"script mode: {self.plan.script.why}")
        return lines

    def describe(self) -> list[str]:
        rt = local_runtime()
        lines = [
            f"s3:// URIs -> {self.store.root}/BUCKET/KEY (a local directory store)",
            f"{OPT_ML} -> {self.run_dir}/jobs/JOB/opt/ml; the Evaluate step's {OPT_ML} -> "
            f"{self.run_dir}/evaluation/opt/ml ({contract.ENV['opt_ml']}; no SM_* variable, as on SageMaker)",
            f"images -> this Python ({self.python}; " + ", ".join(f"{k} {v}" for k, v in rt.items()) + ")",
        ]
        script_mode = self.plan.spec.entrypoint.mode == "script"
        for leg in self.plan.legs:
            emu = self.emulation[leg.name]
            extra = ", ".join(f"{k}={v}" if v else f'{k}=""'
                              for k, v in {**emu.environment, **self.steering(leg.name)}.items())
            declared = self.plan.spec.leg(leg.name)
            own = declared.local
            line = (f"leg {leg.name}: {leg.instance_count} x {leg.instance_type} ({leg.backend}, "
                    f"{leg.processes_per_host} process{'es' if leg.processes_per_host != 1 else ''} per host) -> "
                    f"{self.hosts} host x {leg.local_processes} process{'es' if leg.local_processes > 1 else ''} on "
                    f"{emu.device_label}" + (f" ({extra})" if extra else "")
                    + (f", {contract.ENV['backend']}={emu.backend}" if emu.backend != leg.backend else ""))
            if script_mode:  # the script batches itself: bakeoff splits nothing
                line += f"; the script sets its own batch; {leg.local_processes_why}"
            else:
                line += (f"; per-device batch {leg.batching.per_device_batch_size} x accumulation "
                         f"{leg.batching.gradient_accumulation_steps} -> {leg.local_batching.per_device_batch_size} x "
                         f"{leg.local_batching.gradient_accumulation_steps} (global batch "
                         f"{leg.local_batching.global_batch_size} kept)"
                         + (f"; {leg.local_processes_why}" if leg.derived_from or leg.local_processes > 1 else ""))
            if own is not None and (own.arguments or own.environment):
                given = [f"arguments {' '.join(own.arguments)}"] if own.arguments else []
                given += [f"{k}={v}" for k, v in own.environment.items()]
                line += f"; its local: block (this machine only, not deployed): {', '.join(given)}"
            lines.append(line)
        if self.mlflow:
            lines.append(f"MLflow -> {self.mlflow['MLFLOW_TRACKING_URI']} (the client of this Python; no install)")
        if self.plan.spec.entrypoint.mode == "script":
            how = f"{self.plan.script.why}; " if self.plan.script else ""
            lines.append(f"script mode: {how}requirements.txt is checked against this Python, not installed; an "
                         "emulated neuron leg's SM_NUM_NEURONS is its number of processes here")
        lines.append("the Evaluate step's evaluation config -> emulated: speed and cost labelled, local wall time "
                     "as billable time, prices from the bundled table or the Price List cache")
        return lines

    # --- training jobs --------------------------------------------------------------------
    def training(self, step_name: str, request: dict[str, Any], job_dir: Path) -> LocalTrainingJob:
        ENV = contract.ENV
        env_in = request.get("Environment", {})
        leg_name = env_in[ENV["leg"]]
        script_mode = self.plan.spec.entrypoint.mode == "script"
        seed_key = script_contract.SEED_HP if script_mode else "seed"
        seed = int(json.loads(request["HyperParameters"][seed_key]))
        planned = self.plan.leg(leg_name)
        emu = self.emulation[leg_name]
        opt_ml = job_dir / "opt" / "ml"
        hps = dict(request["HyperParameters"])
        if not script_mode:  # a script-mode script batches itself: its arguments stay as compiled
            hps["per_device_batch_size"] = json.dumps(planned.local_batching.per_device_batch_size)
            hps["gradient_accumulation_steps"] = json.dumps(planned.local_batching.gradient_accumulation_steps)
        env = {k: self._local_value(v) for k, v in env_in.items()
               if k not in (ENV["mlflow_install"], ENV["install_requirements"], ENV["install_packages"])}
        env.update(emu.environment)
        env.update(self.steering(leg_name))
        declared = self.plan.spec.leg(leg_name)
        if declared.local is not None:  # this machine's only (never compiled): printed by describe()
            env.update(declared.local.environment)
        # What runs here (the emulating adapter) and what the leg declares: MLflow shows both, each its own param.
        env[ENV["leg_backend"]] = declared.backend_name
        env[ENV["backend"]] = emu.backend
        env[ENV["nproc_per_node"]] = str(planned.local_processes)  # 1 unless a scaling sweep's leg
        env[ENV["emulated_on"]] = emu.device_label
        env[ENV["spec_hash"]] = self.plan.spec_hash  # a tag on SageMaker; the runtime records it
        # The one path moved, as a mount would: no SM_* variable, because SageMaker sets none
        # in a container whose entrypoint is overridden, and a local run must not lean on one.
        env[ENV["opt_ml"]] = str(opt_ml)
        env.update({"PYTHONUNBUFFERED": "1", "TF_CPP_MIN_LOG_LEVEL": "2"})
        if self.mlflow:
            env.update(self.mlflow)
        if self.hosts > 1:
            env[ENV["host_map"]] = json.dumps(dict.fromkeys(self._host_names(), LOCAL_HOST_ADDRESS))
        channels = {c["ChannelName"]: c["DataSource"]["S3DataSource"]["S3Uri"] for c in request["InputDataConfig"]}
        spec_ = request["AlgorithmSpecification"]
        entry = [*spec_["ContainerEntrypoint"], *spec_.get("ContainerArguments", [])]
        if declared.local is not None and declared.local.arguments and "ContainerArguments" in spec_:
            entry += list(declared.local.arguments)  # after the leg's own: argparse takes the last value given
        command = tuple(self._local_command(part, opt_ml) for part in entry)
        return LocalTrainingJob(
            step_name=step_name, name=job_dir.name, leg=leg_name, seed=seed, request=request,
            hyperparameters=dict(sorted(hps.items())), environment=dict(sorted(env.items())),
            hosts=tuple(self._host_names()), channels=channels, command=command,
            max_runtime_s=int(request["StoppingCondition"]["MaxRuntimeInSeconds"]),
            output_path=request["OutputDataConfig"]["S3OutputPath"], emulated_on=emu.device_label)

    def _host_names(self) -> list[str]:
        return [f"algo-{i + 1}" for i in range(self.hosts)]

    def _local_value(self, value: str) -> str:
        return str(self.store.path(value)) if isinstance(value, str) and value.startswith("s3://") else value

    def _local_command(self, part: str, opt_ml: Path) -> str:
        return part.replace(OPT_ML, str(opt_ml)).replace("exec python3 ", f"exec {self.python} ")

    # --- the Evaluate step ----------------------------------------------------------------
    def processing(self, request: dict[str, Any], eval_dir: Path, steps_file: Path) -> LocalProcessingJob:
        opt_ml = eval_dir / "opt" / "ml"
        jobs_dir = str(eval_dir / "jobs")
        app = request["AppSpecification"]
        env = {k: v for k, v in request.get("Environment", {}).items()
               if k != contract.ENV["mlflow_install"]}
        env.update({contract.LOCAL_S3_ROOT_ENV: str(self.store.root), "PYTHONUNBUFFERED": "1",
                    # ListPipelineExecutionSteps, answered from this execution's record
                    contract.LOCAL_STEPS_ENV: str(steps_file)})
        if self.mlflow:
            env["MLFLOW_TRACKING_URI"] = self.mlflow["MLFLOW_TRACKING_URI"]
        command = [self._local_command(p, opt_ml) for p in app["ContainerEntrypoint"]]
        command += [str(a).replace(OPT_ML, str(opt_ml)).replace("/tmp/bakeoff-jobs", jobs_dir)
                    for a in app.get("ContainerArguments", [])]
        inputs = {i["InputName"]: (i["S3Input"]["S3Uri"], Path(i["S3Input"]["LocalPath"].replace(OPT_ML, str(opt_ml))))
                  for i in request.get("ProcessingInputs", [])}
        outputs = {o["OutputName"]: (Path(o["S3Output"]["LocalPath"].replace(OPT_ML, str(opt_ml))),
                                     o["S3Output"]["S3Uri"])
                   for o in request.get("ProcessingOutputConfig", {}).get("Outputs", [])}
        return LocalProcessingJob(request=request, environment=dict(sorted(env.items())), command=tuple(command),
                                  inputs=inputs, outputs=outputs,
                                  max_runtime_s=int(request["StoppingCondition"]["MaxRuntimeInSeconds"]))

    def installed_evaluation(self, job: LocalProcessingJob) -> LocalProcessingJob:
        """The same Evaluate job run by this installation's evaluate.py instead of the one the
        request unpacks from the code bundle: the bundle of a run directory being decided again
        is data, never run. Its arguments stay the request's, passed as argv (no shell)."""
        from bakeoff.pipelines.plan.bundle import EVALUATE_SCRIPT, entrypoints_dir

        entry = len(job.request["AppSpecification"]["ContainerEntrypoint"])
        command = (self.python, str(entrypoints_dir() / EVALUATE_SCRIPT), *job.command[entry:])
        inputs = {name: value for name, value in job.inputs.items() if name != "code"}
        return dataclasses.replace(job, command=command, inputs=inputs)

    def mlflow_config(self) -> MlflowConfig:
        """The local MLflow store as the Evaluate step's config names it ({}: no MLflow)."""
        if not self.mlflow:
            return {}
        return {"tracking_uri": self.mlflow["MLFLOW_TRACKING_URI"], "experiment": self.plan.spec.experiment,
                "artifact_location": self.mlflow.get(contract.ENV["mlflow_artifact_location"])}

    def emulated_on(self) -> dict[str, str]:
        """Leg -> the device that stands in for its hardware here (the evaluation's "emulated on")."""
        return {name: emulation.device_label for name, emulation in self.emulation.items()}


def host_environment() -> dict[str, str]:
    """This shell's environment without what would change a job (SM_*, BAKEOFF_*, PJRT_*, ...)."""
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith(_HOST_PREFIXES)}
