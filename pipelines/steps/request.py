"""What every step kind's request is built from: the container commands, the Evaluate step's
paths, the service limits, the retry policies, S3 locations, and the spec's security settings
on a request. Below the step kinds (pipelines/steps/*) and the compiler that assembles them."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bakeoff.estimators.registry import instance_of
from bakeoff.pipelines.spec.model import BakeoffSpec

if TYPE_CHECKING:
    from bakeoff.pipelines.plan.model import Plan

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
class StepInputs:
    """What the compiler hands every training-like step (training, precompile, preflight, collective)."""

    bucket: str
    prefix: str
    role: str
    code_uri: str            # the code bundle's S3 URI (the `code` channel)
    data: dict[str, str]     # data channel -> its pipeline parameter's default URI
    defs: list[dict]         # the metric definitions SageMaker scrapes from the job's log
    shash: str               # the spec hash (a tag, never a cache key)


@dataclass
class Compilation:
    """A definition being built: each kind's `compile` appends its steps to `steps` (or puts them
    first), wires its own `DependsOn`, and adds the assets it reads; the compiler calls the kinds in
    `bakeoff.pipelines.steps.COMPILED` order and adds nothing of its own."""

    plan: Plan
    inputs: StepInputs
    preflight: tuple[str, int] | None = None  # `bakeoff preflight`'s (leg, steps), whatever the spec says
    design: dict[str, Any] | None = None  # a round of `--until-decided`: its sequential design (Evaluate's config)
    steps: list[dict[str, Any]] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)  # training step -> its S3 output prefix
    assets: list[tuple[str, bytes]] = field(default_factory=list)  # (key, body) beside the code bundle

    def depend(self, names: set[str], on: str) -> None:
        """The steps named in `names` run after `on`."""
        for step in self.steps:
            if step["Name"] in names:
                step["DependsOn"] = sorted({*step.get("DependsOn", []), on})


def s3(bucket: str, *parts: str) -> str:
    return f"s3://{bucket}/" + "/".join(p.strip("/") for p in parts if p)


def data_parameter_name(channel: str) -> str:
    """The pipeline parameter that holds a data channel's S3 URI."""
    return "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", channel) if part) + "DataUri"


def apply_security(args: dict[str, Any], spec: BakeoffSpec, instance_types: list[str]) -> None:
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


def apply_processing_security(args: dict[str, Any], spec: BakeoffSpec) -> None:
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
