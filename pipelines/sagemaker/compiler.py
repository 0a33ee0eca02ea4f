"""Spec -> SageMaker pipeline definition. A pure function: no network, no clock,
no randomness. The same spec and code give byte-identical JSON, so a pipeline
upserted twice keeps its step-cache hits.

Everything that must live in S3 (the code bundle, the built-in or local data, the
evaluation config) is returned as content-addressed `Asset`s; the definition names
them by sha256 and `bakeoff deploy` (or CDK) uploads them if absent.
"""
from __future__ import annotations

import hashlib
import json
import re
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bakeoff_runtime import contract, porting
from bakeoff_runtime.backend_table import PREFLIGHT_BACKEND, row
from bakeoff_runtime.documents import EvaluationConfig, MlflowConfig
from estimators.compile_cache import cache_key, cache_uri
from estimators.prices import price_for
from estimators.registry import instance_of
from pipelines.errors import SpecError
from pipelines.names import (
    EVALUATE_STEP,
    FAIL_STEP,
    GATE_STEP,
    INCONCLUSIVE_STEP,
    PREFLIGHT_STEP,
    PROPERTY_FILE,
    VERDICT_STEP,
    precompile_step,
)
from pipelines.names import pipeline_name as _pipeline_name
from pipelines.plan.corpus import prepare_corpus
from pipelines.plan.model import (
    Plan,
    PlannedJob,
    build_plan,
    derive_batching,
    encode_hyperparameters,
    evaluation_config,
)
from pipelines.spec.loader import spec_base_dir
from pipelines.spec.model import ROLE_ARN_RE, BakeoffSpec

from .expressions import as_string, get, join, json_get, param

DEFINITION_VERSION = "2020-12-01"
DEFAULT_BUCKET = "bakeoff-artifacts"
# A placeholder that says what it is; `deploy --role` (or CDK) puts the real role in.
PLACEHOLDER_ROLE = "arn:aws:iam::000000000000:role/bakeoff-sagemaker-execution-role"
CODE_ARCHIVE = "sourcedir.tar.gz"
EVAL_INSTANCE = "ml.m5.xlarge"
CACHE_EXPIRY = "P30D"
CAPACITY_RETRY = {"ExceptionType": ["SageMaker.CAPACITY_ERROR"], "IntervalSeconds": 300, "BackoffRate": 2.0,
                  "MaxAttempts": 6}
# A new account's training quotas are small (often 0-4 instances of a type): a job over the quota
# waits for others to release theirs instead of failing the execution. SageMaker.RESOURCE_LIMIT is one
# of the retry policy's exception types (docs.aws.amazon.com/sagemaker/latest/dg/pipelines-retry-policy.html;
# IntervalSeconds at most 43200): every 15 min for 3 h.
RESOURCE_LIMIT_RETRY = {"ExceptionType": ["SageMaker.RESOURCE_LIMIT"], "IntervalSeconds": 900, "BackoffRate": 1.0,
                        "MaxAttempts": 12}
TRAIN_COMMAND = ("mkdir -p /opt/ml/code && tar -xzf /opt/ml/input/data/code/" + CODE_ARCHIVE +
                 " -C /opt/ml/code && cd /opt/ml/code && exec python3 launch.py {script}")
# Script mode: the script and the leg's own arguments travel as ContainerArguments ("$@", never
# parsed by the shell); AlgorithmSpecification.ContainerArguments, botocore's sagemaker model.
SCRIPT_TRAIN_COMMAND = ("mkdir -p /opt/ml/code && tar -xzf /opt/ml/input/data/code/" + CODE_ARCHIVE +
                        " -C /opt/ml/code && cd /opt/ml/code && exec python3 launch.py \"$@\"")
EVAL_COMMAND = ("mkdir -p /opt/ml/code && tar -xzf /opt/ml/processing/input/code/" + CODE_ARCHIVE +
                " -C /opt/ml/code && exec python3 /opt/ml/code/evaluate.py \"$@\"")
EVAL_OUT = "/opt/ml/processing/evaluation"
EVAL_CONFIG = "/opt/ml/processing/input/config/config.json"
EVAL_JOBS_DIR = "/tmp/bakeoff-jobs"
# Model artifacts of the run's own non-training steps (the Preflight step's findings, each leg's
# collective check), for the report's "what porting cost": <EVAL_RECORDS>/preflight/model.tar.gz,
# <EVAL_RECORDS>/collective/<leg>/model.tar.gz.
EVAL_RECORDS = "/opt/ml/processing/input/records"
# CreateProcessingJob takes at most 10 ProcessingInputs and 100 ContainerArguments (botocore's
# sagemaker service-2.json: ProcessingInputs "max": 10, ContainerArguments "max": 100).
MAX_PROCESSING_INPUTS = 10
MAX_CONTAINER_ARGUMENTS = 100
# Up to this many jobs each is named by one argument (its TrainingJobName, resolved by the
# pipeline), less what the records take; beyond it the Evaluate step lists the execution's
# steps itself (ListPipelineExecutionSteps).
MAX_EVAL_JOB_ARGUMENTS = 90


@dataclass(frozen=True)
class Asset:
    """A file the pipeline reads from S3, addressed by its content."""

    key: str
    body: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.body).hexdigest()


@dataclass(frozen=True)
class CompiledPipeline:
    name: str
    definition: dict[str, Any]
    assets: tuple[Asset, ...]
    bucket: str
    role_arn: str
    # CreatePipeline/UpdatePipeline's ParallelismConfiguration (not part of the definition itself).
    max_parallel_steps: int | None = None

    @property
    def parallelism(self) -> dict[str, int] | None:
        return {"MaxParallelExecutionSteps": self.max_parallel_steps} if self.max_parallel_steps else None

    def to_json(self, indent: int | None = None) -> str:
        if indent:
            return json.dumps(self.definition, indent=indent, sort_keys=True) + "\n"
        return json.dumps(self.definition, sort_keys=True, separators=(",", ":"))


def pipeline_name(spec: BakeoffSpec) -> str:
    return _pipeline_name(spec.name)


def data_parameter_name(channel: str) -> str:
    """The pipeline parameter that holds a data channel's S3 URI."""
    return "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", channel) if part) + "DataUri"


def _s3(bucket: str, *parts: str) -> str:
    return f"s3://{bucket}/" + "/".join(p.strip("/") for p in parts if p)


def _channel_assets(name: str, path: Path, bucket: str, prefix: str) -> tuple[str, list[Asset]]:
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    blobs = [(f.relative_to(path).as_posix() if path.is_dir() else f.name, f.read_bytes()) for f in files]
    listing = "".join(f"{n}\0{hashlib.sha256(b).hexdigest()}\n" for n, b in blobs)
    key_root = f"{prefix}/data/{hashlib.sha256(listing.encode()).hexdigest()[:32]}/{name}"
    return _s3(bucket, key_root) + "/", [Asset(f"{key_root}/{n}", b) for n, b in blobs]


def _data_channels(spec: BakeoffSpec, base_dir: Path, bucket: str, prefix: str) -> tuple[dict[str, str], list[Asset]]:
    """channel -> default S3 URI, plus the assets that put local data there (content-addressed)."""
    channels: dict[str, str] = {}
    assets: list[Asset] = []
    if not spec.data.channels and spec.entrypoint.builtin:
        with tempfile.TemporaryDirectory(prefix="bakeoff-corpus-") as tmp:
            manifest = prepare_corpus(Path(tmp))
            for name in manifest["channels"]:
                channels[name], found = _channel_assets(name, Path(tmp) / name, bucket, prefix)
                assets += found
    for name, uri in spec.data.channels.items():
        if uri.startswith("s3://"):
            channels[name] = uri.rstrip("/") + "/"
            continue
        from pipelines.plan.bundle import inside, is_secret
        from pipelines.spec.loader import locate

        file, line = locate(spec, ("data", "channels", name))
        try:
            path = inside(base_dir, uri, spec.entrypoint.allow_outside_spec_dir, f"data.channels.{name}")
        except SpecError as exc:
            raise SpecError(exc.message, file=file, line=line, field=exc.field) from None
        if not path.exists():
            raise SpecError(f"channel {name!r}: {path} does not exist", file=file, line=line,
                            field=f"data.channels.{name}")
        secrets = [p.name for p in ([path] if path.is_file() else path.rglob("*")) if is_secret(p.name)]
        if secrets:
            raise SpecError(f"channel {name!r} holds files that look like secrets ({', '.join(sorted(secrets)[:3])}); "
                            "a data channel is uploaded as it is: move them out", file=file, line=line,
                            field=f"data.channels.{name}")
        channels[name], found = _channel_assets(name, path, bucket, prefix)
        assets += found
    return dict(sorted(channels.items())), assets


def metric_definitions(spec: BakeoffSpec) -> list[dict[str, str]]:
    """What SageMaker parses from the jobs' logs: generated from the step-line format the
    jobs print (bakeoff_runtime.contract), plus the parity metric when it is another one.
    In script mode the spec's own regexes, then the step lines the step hook prints."""
    if spec.entrypoint.mode == "script":
        own = [{"Name": m.name, "Regex": m.regex} for m in spec.entrypoint.script_mode.metrics]
        taken = {d["Name"] for d in own}
        return own + [d for d in contract.metric_definitions() if d["Name"] not in taken]
    metric = spec.parity.metric
    extra = {f"validation:{metric}": metric} if metric != "val_loss" else {}
    return contract.metric_definitions(extra)


def _training_step(plan: Plan, job: PlannedJob, *, bucket: str, prefix: str, role: str, code_uri: str,
                   data: dict[str, str], defs: list[dict], shash: str) -> tuple[dict[str, Any], str]:
    spec = plan.spec
    leg = spec.leg(job.leg)
    planned = plan.leg(job.leg)
    ENV = contract.ENV
    env = dict(job.environment)
    hps = encode_hyperparameters(job.hyperparameters)
    script_mode = spec.entrypoint.mode == "script"
    if script_mode:
        # The script counts its own steps; MaxSteps is the Runtime's.
        if spec.entrypoint.script_mode.install_requirements:
            env[ENV["install_requirements"]] = "1"
    else:
        hps["max_steps"] = as_string(param("MaxSteps"))
    key = cache_key(backend=planned.backend, image=planned.image, precision=leg.precision, environment=env,
                    hyperparameters=job.hyperparameters, world_size=planned.batching.world_size)
    cache = cache_uri(bucket, prefix, planned.backend, key)
    from pipelines.plan.packages import needed

    wanted = needed(spec, plan.bundle)
    if wanted:
        # Each job installs bakeoff's pin where its image lacks the package (the Neuron image has
        # transformers, AWS's PyTorch GPU image does not): pipelines/plan/packages.py.
        env[ENV["install_packages"]] = ",".join(wanted)
    if spec.security.network_isolation:
        # An isolated container has no network (CreateTrainingJob EnableNetworkIsolation), so an s3:// cache
        # cannot be read or written; the Neuron cache stays at its on-instance default and the job compiles
        # cold (`validate` says so). The tag below still names where the cache would be.
        pass
    else:
        env[ENV["compile_cache"]] = cache
        if row(leg.backend_name).torch_neuronx:  # Neuron reads and writes its cache there itself
            env["NEURON_COMPILE_CACHE_URL"] = cache
    if spec.mlflow.enabled and spec.mlflow.tracking_uri and not spec.security.network_isolation:
        # An isolated job cannot reach the server: the Evaluate step back-fills its run.
        env["MLFLOW_TRACKING_URI"] = spec.mlflow.tracking_uri
        env[ENV["mlflow_experiment"]] = spec.experiment
        env[ENV["mlflow_install"]] = "1"  # AWS's PyTorch 2.9 images ship without mlflow
    # A script that raises still exits 0 (its failure is in summary.json), so the pipeline
    # reaches Evaluate and a crashed leg gets a verdict; the platform's own failures do not.
    env[ENV["continue_on_failure"]] = "1"
    step_name = job.step_name
    output = _s3(bucket, prefix, spec.name, "jobs", job.name)
    channels = [{
        "ChannelName": "code",
        "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": code_uri,
                                        "S3DataDistributionType": "FullyReplicated"}},
        "InputMode": "File",
    }]
    for name in data:
        channels.append({
            "ChannelName": name,
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": param(data_parameter_name(name)),
                                            "S3DataDistributionType": "FullyReplicated"}},
            "InputMode": "File",
        })
    args: dict[str, Any] = {
        "AlgorithmSpecification": {
            "TrainingImage": planned.image,
            "TrainingInputMode": "File",
            "ContainerEntrypoint": (["/bin/sh", "-c", SCRIPT_TRAIN_COMMAND, "launch.py"] if script_mode else
                                    ["/bin/sh", "-c", TRAIN_COMMAND.format(script=shlex.quote(job.script))]),
            **({"ContainerArguments": [job.script, *leg.arguments]} if script_mode else {}),
            "MetricDefinitions": defs,
            "EnableSageMakerMetricsTimeSeries": True,
        },
        "HyperParameters": hps,
        "RoleArn": role,
        "InputDataConfig": channels,
        "OutputDataConfig": {"S3OutputPath": output},
        "ResourceConfig": {"InstanceType": leg.instance_type, "InstanceCount": leg.instance_count,
                           "VolumeSizeInGB": leg.volume_size_gb},
        "StoppingCondition": {"MaxRuntimeInSeconds": leg.max_runtime_s},
        "Environment": dict(sorted(env.items())),
        "Tags": [
            {"Key": "bakeoff:name", "Value": spec.name},
            {"Key": "bakeoff:leg", "Value": leg.name},
            {"Key": "bakeoff:seed", "Value": str(job.seed)},
            {"Key": "bakeoff:spec-hash", "Value": shash},
            {"Key": "bakeoff:backend", "Value": leg.backend},
            {"Key": "bakeoff:compile-cache", "Value": cache},
        ],
    }
    _apply_security(args, spec, [leg.instance_type])
    spot = leg.managed_spot is True or (leg.managed_spot == "after_first_seed" and job.seed != spec.seed_list[0])
    if spot or spec.training.checkpoint_interval:
        # Static per job content: a restarted or spot-interrupted job resumes; the
        # runtime refuses a checkpoint written by other inputs or by a finished run.
        args["CheckpointConfig"] = {"S3Uri": _s3(bucket, prefix, spec.name, "checkpoints", job.name, key),
                                    "LocalPath": "/opt/ml/checkpoints"}
    if spot:
        args["EnableManagedSpotTraining"] = True
        args["StoppingCondition"]["MaxWaitTimeInSeconds"] = leg.max_wait_s or 2 * leg.max_runtime_s
    step = {
        "Name": step_name,
        "Type": "Training",
        "Arguments": args,
        "CacheConfig": {"Enabled": True, "ExpireAfter": CACHE_EXPIRY},
        "RetryPolicies": [CAPACITY_RETRY, RESOURCE_LIMIT_RETRY],
    }
    return step, output


def _apply_security(args: dict[str, Any], spec: BakeoffSpec, instance_types: list[str]) -> None:
    """The spec's VPC, isolation, encryption and KMS settings on a CreateTrainingJob request."""
    sec = spec.security
    if sec.vpc_config():
        args["VpcConfig"] = sec.vpc_config()
    if sec.network_isolation:
        args["EnableNetworkIsolation"] = True
    if sec.encrypt_inter_container_traffic:
        args["EnableInterContainerTrafficEncryption"] = True
    if sec.output_kms_key:
        args["OutputDataConfig"]["KmsKeyId"] = sec.output_kms_key
    if sec.volume_kms_key and not any(instance_of(t)[1].local_storage for t in instance_types):
        args["ResourceConfig"]["VolumeKmsKeyId"] = sec.volume_kms_key


def _apply_processing_security(args: dict[str, Any], spec: BakeoffSpec) -> None:
    """The same VPC, encryption and keys on the Evaluate step (never network isolation: it
    reads the jobs' outputs from S3 itself and logs to MLflow)."""
    sec = spec.security
    network: dict[str, Any] = {}
    if sec.vpc_config():
        network["VpcConfig"] = sec.vpc_config()
    if sec.encrypt_inter_container_traffic:
        network["EnableInterContainerTrafficEncryption"] = True
    if network:
        args["NetworkConfig"] = network
    if sec.output_kms_key:
        args["ProcessingOutputConfig"]["KmsKeyId"] = sec.output_kms_key
    if sec.volume_kms_key and not instance_of(EVAL_INSTANCE)[1].local_storage:
        args["ProcessingResources"]["ClusterConfig"]["VolumeKmsKeyId"] = sec.volume_kms_key


def preflight_step(plan: Plan, leg: str | None = None, steps: int | None = None, **kw) -> dict[str, Any]:
    """A trn leg's first job, a few steps long, on a CPU instance with the preflight probes on:
    it fails (stopping the pipeline) when it finds a blocker. `bakeoff preflight` runs this
    same request locally."""
    spec = plan.spec
    name = leg or next((lg.name for lg in spec.legs if lg.backend == PREFLIGHT_BACKEND), spec.legs[0].name)
    job = plan.jobs_of(name)[0]
    ENV = contract.ENV
    step, _ = _training_step(plan, job, **kw)
    args = step["Arguments"]
    hps = dict(args["HyperParameters"])
    hps.update(max_steps=str(steps or spec.preflight.steps), log_interval="1", eval_interval="0",
               checkpoint_interval="0", warmup_exclude_steps="1")
    # One process on a CPU instance: the leg's global batch split for one process, not for the leg's
    # devices (its per-device share would not add up to the global batch, and the job would refuse it).
    one = derive_batching(int(job.hyperparameters["global_batch_size"]), 1, spec.training.max_per_device_batch_size)
    hps.update(per_device_batch_size=str(one.per_device_batch_size),
               gradient_accumulation_steps=str(one.gradient_accumulation_steps))
    args["HyperParameters"] = dict(sorted(hps.items()))
    env = {k: v for k, v in args["Environment"].items() if not k.startswith(("NEURON_", "FI_", "RDMAV_"))}
    env.update({"PJRT_DEVICE": "CPU", ENV["backend"]: PREFLIGHT_BACKEND, ENV["preflight"]: "1",
                ENV["preflight_fail_on_blocker"]: "1", ENV["nproc_per_node"]: "1"})
    # A preflight that crashes has found something too: it fails the step, so no trn job starts
    # (the training steps' continue-on-failure is for the Evaluate step, which this step is not).
    env.pop(ENV["continue_on_failure"], None)
    args["Environment"] = dict(sorted(env.items()))
    args["ResourceConfig"] = {"InstanceType": spec.preflight.instance_type, "InstanceCount": 1, "VolumeSizeInGB": 50}
    args["StoppingCondition"] = {"MaxRuntimeInSeconds": 3600}
    args["OutputDataConfig"] = {"S3OutputPath": _s3(kw["bucket"], kw["prefix"], spec.name, "preflight", name)}
    args.pop("VpcConfig", None)
    _apply_security(args, spec, [spec.preflight.instance_type])
    args.pop("CheckpointConfig", None)
    args.pop("EnableManagedSpotTraining", None)
    args["Tags"] = [t for t in args["Tags"] if t["Key"] not in ("bakeoff:seed", "bakeoff:compile-cache")]
    args["Tags"].append({"Key": "bakeoff:step", "Value": "preflight"})
    step["Name"] = PREFLIGHT_STEP
    step.pop("RetryPolicies", None)
    return step


def _spot_seeds_after_the_first(plan: Plan, leg: str, steps: list[dict[str, Any]]) -> None:
    """`after_first_seed`: the spot seeds start once the on-demand first seed has filled the leg's
    compile cache. Started together they would all compile cold, and a spot seed interrupted
    mid-compile leaves a cache entry Neuron marks failed for every later job of the leg."""
    jobs = plan.jobs_of(leg)
    on_demand = plan.spec.seed_list[0]  # the seed _training_step keeps off spot
    first = next(j.step_name for j in jobs if j.seed == on_demand)
    later = {j.step_name for j in jobs if j.seed != on_demand}
    for step in steps:
        if step["Name"] in later:
            step["DependsOn"] = sorted({*step.get("DependsOn", []), first})


PRECOMPILE_STEPS = 10


def _precompile_step(plan: Plan, job: PlannedJob, **kw) -> dict[str, Any]:
    """neuron_parallel_compile over the leg's exact launch (only the step count differs),
    writing to the same compile-cache location the leg's training jobs read."""
    step, _ = _training_step(plan, job, **kw)
    args = step["Arguments"]
    hps = {**args["HyperParameters"], "max_steps": str(PRECOMPILE_STEPS)}
    if int(json.loads(hps.get("eval_interval", "0"))) > 0:
        # Cross one evaluation inside the loop: the validation graphs, and the training graph
        # that follows them, are extracted too, not only the first steps'.
        hps["eval_interval"] = str(PRECOMPILE_STEPS // 2)
    args["HyperParameters"] = dict(sorted(hps.items()))
    command = TRAIN_COMMAND.format(script=shlex.quote(job.script)).replace(
        "exec python3 launch.py", "exec neuron_parallel_compile python3 launch.py")
    args["AlgorithmSpecification"]["ContainerEntrypoint"] = ["/bin/sh", "-c", command]
    precompile = contract.ENV["precompile"]
    args["Environment"] = dict(sorted({**args["Environment"], precompile: "1"}.items()))
    args["OutputDataConfig"] = {**args["OutputDataConfig"],
                                "S3OutputPath": _s3(kw["bucket"], kw["prefix"], plan.spec.name, "precompile", job.leg)}
    args["Tags"] = [t for t in args["Tags"] if t["Key"] != "bakeoff:seed"] + [{"Key": "bakeoff:step",
                                                                                 "Value": "precompile"}]
    args.pop("CheckpointConfig", None)
    step["Name"] = precompile_step(job.leg)
    return step


COLLECTIVE_STEP_PREFIX = "Collective-"  # as long as "Precompile-": leg names are checked to fit it
COLLECTIVE_MAX_RUNTIME_S = 1800


def collective_step_name(leg: str) -> str:
    return f"{COLLECTIVE_STEP_PREFIX}{leg}"


def _collective_step(plan: Plan, job: PlannedJob, **kw) -> dict[str, Any]:
    """legs[].collective_check: all-reduce and all-gather on the leg's own instances, one process
    per device as launch.py starts them for training (so at the leg's world size), before its
    training steps. A wrong result does not fail the step: a failed step would keep every step
    after it, the Evaluate step included, from running, so the execution would end with no
    verdict at all. The step ends Completed with collective.json (ok or the reason) in its model
    artifacts; the leg's training jobs receive those through the `collective` channel and
    launch.py records them as failed with that reason, without training, so only that leg stops
    and the verdict names why. It logs no training metrics, so no comparison sees it."""
    from pipelines.plan.bundle import COLLECTIVE_SCRIPT

    step, _ = _training_step(plan, job, **kw)
    args = step["Arguments"]
    leg = plan.spec.leg(job.leg)
    ENV = contract.ENV
    # No MLflow: the check logs no run (and must not spend its minutes installing a client).
    dropped = {ENV["mlflow_install"], ENV["mlflow_experiment"], "MLFLOW_TRACKING_URI"}
    env = {k: v for k, v in args["Environment"].items() if k not in dropped}
    if leg.instance.network_gbps:
        env["BAKEOFF_NETWORK_GBPS"] = str(leg.instance.network_gbps)
    args["Environment"] = dict(sorted(env.items()))
    args["AlgorithmSpecification"] = {
        "TrainingImage": args["AlgorithmSpecification"]["TrainingImage"], "TrainingInputMode": "File",
        "ContainerEntrypoint": ["/bin/sh", "-c", TRAIN_COMMAND.format(script=shlex.quote(COLLECTIVE_SCRIPT))]}
    args["StoppingCondition"] = {"MaxRuntimeInSeconds": min(COLLECTIVE_MAX_RUNTIME_S, leg.max_runtime_s)}
    args["OutputDataConfig"] = {**args["OutputDataConfig"],
                                "S3OutputPath": _s3(kw["bucket"], kw["prefix"], plan.spec.name, "collective", job.leg)}
    args["Tags"] = [t for t in args["Tags"] if t["Key"] not in ("bakeoff:seed", "bakeoff:compile-cache")] + [
        {"Key": "bakeoff:step", "Value": "collective"}]
    args.pop("CheckpointConfig", None)
    args.pop("EnableManagedSpotTraining", None)  # a few minutes: not worth an interruption
    step["Name"] = collective_step_name(job.leg)
    return step


def collective_channel(check_step: str) -> dict[str, Any]:
    """The channel that hands a Collective step's model.tar.gz to the leg's training jobs."""
    return {"ChannelName": contract.COLLECTIVE_CHANNEL,
            "DataSource": {"S3DataSource": {
                "S3DataType": "S3Prefix", "S3Uri": {"Get": f"Steps.{check_step}.ModelArtifacts.S3ModelArtifacts"},
                "S3DataDistributionType": "FullyReplicated"}},
            "InputMode": "File"}


def _add_collective_steps(plan: Plan, train_steps: list[dict[str, Any]], **kw) -> None:
    """One check per leg that asks for it (every size of a sweep is a leg), where the job has
    more than one process: the leg's training and precompile steps depend on it."""
    from pipelines.names import precompile_step as precompile_name

    for leg in plan.spec.legs:
        if not getattr(leg, "collective_check", False) or plan.leg(leg.name).batching.world_size < 2:
            continue
        check = _collective_step(plan, plan.jobs_of(leg.name)[0], **kw)
        seeds = {j.step_name for j in plan.jobs_of(leg.name)}
        for step in train_steps:
            if step["Name"] in seeds | {precompile_name(leg.name)}:
                step["DependsOn"] = sorted({*step.get("DependsOn", []), check["Name"]})
            if step["Name"] in seeds:  # the result travels as a channel: see _collective_step
                step["Arguments"]["InputDataConfig"].append(collective_channel(check["Name"]))
        train_steps.insert(0, check)


def _records(steps: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[Any]]:
    """What the Evaluate step reads of the run's own non-training steps (the Preflight step, each
    leg's Collective step): their model.tar.gz under EVAL_RECORDS, each a ProcessingInput by
    property reference (which also orders the step before the Evaluate step), and the `--records`
    arguments. Those past the input limit (MAX_PROCESSING_INPUTS, less the code and config
    inputs) travel as `--record=KIND/LEG=URI` arguments, the same reference resolved by the
    pipeline and fetched by evaluate.py, so no leg's "what porting cost" row is lost to the
    limit. Returns (inputs, arguments)."""
    found = [(PREFLIGHT_STEP, "preflight", "preflight")] if any(s["Name"] == PREFLIGHT_STEP for s in steps) else []
    found += [(s["Name"], f"collective-{s['Name'][len(COLLECTIVE_STEP_PREFIX):]}",
               f"collective/{s['Name'][len(COLLECTIVE_STEP_PREFIX):]}")
              for s in steps if s["Name"].startswith(COLLECTIVE_STEP_PREFIX)]
    if not found:
        return [], []
    room = MAX_PROCESSING_INPUTS - 2
    inputs = [{"InputName": name, "S3Input": {
        "S3Uri": get(f"Steps.{step}.ModelArtifacts.S3ModelArtifacts"), "LocalPath": f"{EVAL_RECORDS}/{where}",
        "S3DataType": "S3Prefix", "S3InputMode": "File", "S3DataDistributionType": "FullyReplicated"}}
        for step, name, where in found[:room]]
    fetched = [join(f"--record={where}=", get(f"Steps.{step}.ModelArtifacts.S3ModelArtifacts"))
               for step, _, where in found[room:]]
    return inputs, ["--records", EVAL_RECORDS, *fetched]


def _eval_config(plan: Plan) -> EvaluationConfig:
    spec = plan.spec
    mlflow: MlflowConfig = {}
    if spec.mlflow.enabled and spec.mlflow.tracking_uri:
        mlflow = {"tracking_uri": spec.mlflow.tracking_uri, "experiment": spec.experiment}
    config = evaluation_config(
        spec, prices={leg.name: price_for(leg.instance_type, leg.price_per_hour) for leg in spec.legs},
        images={leg.name: leg.image for leg in plan.legs}, emulated_on={},
        cost_basis="estimate: job wall time x on-demand price (`bakeoff report` uses BillableTimeInSeconds)",
        mlflow=mlflow)
    # The numerics a leg's jobs run with (compiler flags, stochastic rounding), for "what porting cost".
    numerics_env = porting.NUMERICS_ENV
    for name, leg_cfg in config["legs"].items():
        env = plan.jobs_of(name)[0].environment if plan.jobs_of(name) else {}
        leg_cfg["numerics_environment"] = {k: env[k] for k in numerics_env if k in env}
    return config


def _with_region(spec: BakeoffSpec, region: str) -> BakeoffSpec:
    """The spec in another region, validated again (its images must be in that region)."""
    from pydantic import ValidationError

    from pipelines.spec.loader import format_validation_error

    data = spec.model_dump(mode="json")
    data["storage"]["region"] = region
    try:
        moved = BakeoffSpec.model_validate(data)
    except ValidationError as exc:
        raise format_validation_error(exc, "--region", {}) from None
    moved._source_path = spec._source_path
    return moved


def compile_pipeline(spec: BakeoffSpec, *, base_dir: Path | None = None, bucket: str | None = None,
                     role_arn: str | None = None, region: str | None = None) -> CompiledPipeline:
    """The SageMaker pipeline definition of `spec` and the assets it reads from S3."""
    if region and region != spec.storage.region:
        spec = _with_region(spec, region)
    return compile_plan(build_plan(spec, base_dir or spec_base_dir(spec)), base_dir=base_dir, bucket=bucket,
                        role_arn=role_arn)


def compile_plan(plan: Plan, *, base_dir: Path | None = None, bucket: str | None = None,
                 role_arn: str | None = None, preflight: tuple[str, int] | None = None,
                 data_channels: dict[str, str] | None = None) -> CompiledPipeline:
    """`preflight=(leg, steps)` adds the Preflight step for that leg whatever the spec says
    (`bakeoff preflight` runs that request locally). `data_channels`: each channel's S3 URI as
    already uploaded, instead of reading (and uploading) the spec's local data again; deciding
    a run again compiles with the run's own record, since the data's folder may have moved."""
    spec = plan.spec
    base_dir = base_dir or spec_base_dir(spec)
    bucket = bucket or spec.storage.bucket or DEFAULT_BUCKET
    role = role_arn or PLACEHOLDER_ROLE
    if not ROLE_ARN_RE.match(role):
        raise SpecError(f"role {role!r} is not an IAM role ARN (arn:aws:iam::123456789012:role/NAME)",
                        field="--role")
    prefix = spec.storage.prefix
    shash = plan.spec_hash

    archive = plan.bundle.tar_gz()
    code_key = f"{prefix}/code/{hashlib.sha256(archive).hexdigest()}/{CODE_ARCHIVE}"
    code_asset = Asset(code_key, archive)
    code_uri = _s3(bucket, code_key)
    if data_channels is None:
        data, data_assets = _data_channels(spec, base_dir, bucket, prefix)
    else:
        data, data_assets = dict(sorted(data_channels.items())), []
    defs = metric_definitions(spec)
    # The arguments every training-like step is built from (training, precompile, preflight).
    kw: Any = {"bucket": bucket, "prefix": prefix, "role": role, "code_uri": code_uri, "data": data, "defs": defs,
               "shash": shash}

    train_steps: list[dict[str, Any]] = []
    job_args: list[Any] = []
    for job in plan.jobs:
        step, output = _training_step(plan, job, **kw)
        train_steps.append(step)
        job_args.append(join(f"--job={job.name}={output}/", get(f"Steps.{step['Name']}.TrainingJobName"),
                             "/output/output.tar.gz"))
    for leg in spec.legs:
        if leg.precompile:
            pre = _precompile_step(plan, plan.jobs_of(leg.name)[0], **kw)
            for step in train_steps:
                if step["Name"] in {j.step_name for j in plan.jobs_of(leg.name)}:
                    step.setdefault("DependsOn", []).append(pre["Name"])
            train_steps.insert(0, pre)
        elif leg.managed_spot == "after_first_seed":
            _spot_seeds_after_the_first(plan, leg.name, train_steps)
    _add_collective_steps(plan, train_steps, **kw)
    if spec.preflight.enabled or preflight:
        first = preflight_step(plan, *(preflight or ()), **kw)
        for step in train_steps:
            step["DependsOn"] = sorted({*step.get("DependsOn", []), PREFLIGHT_STEP})
        train_steps.insert(0, first)
    record_inputs, record_args = _records(train_steps)
    if len(job_args) > MAX_EVAL_JOB_ARGUMENTS - len(record_args):
        # Too many for one argument each: the Evaluate step asks SageMaker for the execution's
        # training jobs (ListPipelineExecutionSteps; the role needs that permission).
        job_args = ["--execution-arn", get("Execution.PipelineExecutionArn"),
                    "--job-prefix", _s3(bucket, prefix, spec.name, "jobs") + "/"]

    config_body = (json.dumps(_eval_config(plan), indent=2, sort_keys=True) + "\n").encode()
    config_asset = Asset(f"{prefix}/{spec.name}/eval-config/{hashlib.sha256(config_body).hexdigest()}/config.json",
                         config_body)
    eval_kind = instance_of(EVAL_INSTANCE)[0]
    ENV = contract.ENV
    eval_env = {ENV["name"]: spec.name, ENV["spec_hash"]: shash}
    if spec.mlflow.enabled and spec.mlflow.tracking_uri:
        eval_env["MLFLOW_TRACKING_URI"] = spec.mlflow.tracking_uri
        eval_env[ENV["mlflow_install"]] = "1"
    evaluate: dict[str, Any] = {
        "Name": EVALUATE_STEP,
        "Type": "Processing",
        "Arguments": {
            "ProcessingResources": {"ClusterConfig": {"InstanceCount": 1, "InstanceType": EVAL_INSTANCE,
                                                      "VolumeSizeInGB": 30}},
            "AppSpecification": {
                "ImageUri": eval_kind.default_image("cpu", spec.storage.region),
                "ContainerEntrypoint": ["/bin/sh", "-c", EVAL_COMMAND, "evaluate"],
                "ContainerArguments": ["--config", EVAL_CONFIG, "--out", EVAL_OUT, "--jobs", EVAL_JOBS_DIR,
                                       "--margin", as_string(param("ParityMargin")),
                                       "--parent-key", get("Execution.PipelineExecutionId"), *job_args],
            },
            "RoleArn": role,
            "ProcessingInputs": [
                {"InputName": "code", "S3Input": {"S3Uri": code_uri, "LocalPath": "/opt/ml/processing/input/code",
                                                  "S3DataType": "S3Prefix",
                             "S3InputMode": "File", "S3DataDistributionType": "FullyReplicated"}},
                {"InputName": "config", "S3Input": {"S3Uri": _s3(bucket, config_asset.key),
                                                    "LocalPath": "/opt/ml/processing/input/config",
                             "S3DataType": "S3Prefix", "S3InputMode": "File",
                             "S3DataDistributionType": "FullyReplicated"}},
            ],
            "ProcessingOutputConfig": {"Outputs": [{
                "OutputName": "evaluation",
                "S3Output": {"S3Uri": join(_s3(bucket, prefix, spec.name, "evaluation") + "/",
                                           get("Execution.PipelineExecutionId")),
                             "LocalPath": EVAL_OUT, "S3UploadMode": "EndOfJob"}}]},
            "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
            "Environment": eval_env,
        },
        "PropertyFiles": [{"PropertyFileName": PROPERTY_FILE, "OutputName": "evaluation",
                           "FilePath": "evaluation.json"}],
        "DependsOn": [s["Name"] for s in train_steps],
    }
    evaluate["Arguments"]["ProcessingInputs"] += record_inputs
    evaluate["Arguments"]["AppSpecification"]["ContainerArguments"] += record_args
    _apply_processing_security(evaluate["Arguments"], spec)
    verdict = json_get(EVALUATE_STEP, PROPERTY_FILE, "verdict")
    fail = {
        "Name": FAIL_STEP,
        "Type": "Fail",
        "Arguments": {"ErrorMessage": join(f"bake-off {spec.name}: parity fails (exit code 1); failed checks: ",
                                           json_get(EVALUATE_STEP, PROPERTY_FILE, "failed_checks"))},
    }
    inconclusive = {
        "Name": INCONCLUSIVE_STEP,
        "Type": "Fail",
        "Arguments": {"ErrorMessage": join(f"bake-off {spec.name}: inconclusive (exit code 3); undecided checks: ",
                                           json_get(EVALUATE_STEP, PROPERTY_FILE, "undecided_checks"),
                                           "; to decide it: ",
                                           json_get(EVALUATE_STEP, PROPERTY_FILE, "to_decide"))},
    }
    which = {
        "Name": VERDICT_STEP,
        "Type": "Condition",
        "Arguments": {"Conditions": [{"Type": "Equals", "LeftValue": verdict, "RightValue": "fail"}],
                      "IfSteps": [fail], "ElseSteps": [inconclusive]},
    }
    gate = {
        "Name": GATE_STEP,
        "Type": "Condition",
        "Arguments": {
            "Conditions": [{"Type": "Equals", "LeftValue": verdict, "RightValue": "pass"}],
            "IfSteps": [],
            "ElseSteps": [which],
        },
    }
    parameters: list[dict[str, Any]] = [{"Name": data_parameter_name(name), "Type": "String", "DefaultValue": uri}
                                        for name, uri in data.items()]
    parameters += [
        {"Name": "MaxSteps", "Type": "Integer", "DefaultValue": spec.training.steps},
        {"Name": "ParityMargin", "Type": "Float", "DefaultValue": spec.parity.margin},
    ]
    definition = {
        "Version": DEFINITION_VERSION,
        "Metadata": {},
        "Parameters": parameters,
        "Steps": [*train_steps, evaluate, gate],
    }
    assets = tuple(sorted([code_asset, config_asset, *data_assets], key=lambda a: a.key))
    return CompiledPipeline(pipeline_name(spec), definition, assets, bucket, role, spec.max_parallel_steps)


def synth_json(spec: BakeoffSpec, **kwargs) -> str:
    """The definition as `bakeoff synth` writes it."""
    return compile_pipeline(spec, **kwargs).to_json(indent=2)
