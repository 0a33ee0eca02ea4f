"""The bake-off spec: pydantic models that are the one source for YAML, Python and JSON Schema.

Validators only check and normalise; they never touch the file system or network. The field types
live in bakeoff.pipelines.spec.fields and the legs in bakeoff.pipelines.spec.legs (below bakeoff.pipelines.spec.derived,
whose
check of the derived legs this module's validator calls); both are re-exported here, so
`from bakeoff.pipelines.spec.model import Leg` is the spec's whole vocabulary.
"""
from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, PrivateAttr, field_validator, model_validator

from bakeoff.estimators import lookup_instance
from bakeoff.pipelines.names import STEP_NAME_RE, precompile_step, step_name
from bakeoff.pipelines.spec.decision import Decision
from bakeoff.pipelines.spec.derived import check_derived
from bakeoff.pipelines.spec.fields import BUCKET_RE as BUCKET_RE
from bakeoff.pipelines.spec.fields import DEFAULT_RUNTIME_QUOTA_S as DEFAULT_RUNTIME_QUOTA_S
from bakeoff.pipelines.spec.fields import IMAGE_RE as IMAGE_RE
from bakeoff.pipelines.spec.fields import MAX_GLOBAL_BATCH as MAX_GLOBAL_BATCH
from bakeoff.pipelines.spec.fields import MAX_RUNTIME_S as MAX_RUNTIME_S
from bakeoff.pipelines.spec.fields import MAX_SEEDS as MAX_SEEDS
from bakeoff.pipelines.spec.fields import MAX_STEPS as MAX_STEPS
from bakeoff.pipelines.spec.fields import NAME_RE as NAME_RE
from bakeoff.pipelines.spec.fields import ROLE_ARN_RE as ROLE_ARN_RE
from bakeoff.pipelines.spec.fields import S3_URI_RE as S3_URI_RE
from bakeoff.pipelines.spec.fields import SCRIPT_RE as SCRIPT_RE
from bakeoff.pipelines.spec.fields import Backend as Backend
from bakeoff.pipelines.spec.fields import Float as Float
from bakeoff.pipelines.spec.fields import Int as Int
from bakeoff.pipelines.spec.fields import Precision as Precision
from bakeoff.pipelines.spec.fields import SpecFieldError as SpecFieldError
from bakeoff.pipelines.spec.fields import _Model
from bakeoff.pipelines.spec.fields import looks_like_secret as looks_like_secret
from bakeoff.pipelines.spec.legs import Leg as Leg
from bakeoff.pipelines.spec.legs import ScalingSize as ScalingSize
from bakeoff.pipelines.spec.script import ScriptMode
from bakeoff_runtime.contract.backend_table import row


@lru_cache(maxsize=1)
def sagemaker_regions() -> frozenset[str]:
    """Regions with a SageMaker API endpoint, from the endpoint data botocore ships
    (data/endpoints.json, service `api.sagemaker`): read offline, no AWS call."""
    from botocore.loaders import create_loader

    out = set()
    for partition in create_loader().load_data("endpoints")["partitions"]:
        if partition["partition"] not in ("aws", "aws-cn", "aws-us-gov"):
            continue
        for name, ep in partition["services"].get("api.sagemaker", {}).get("endpoints", {}).items():
            if "fips" not in name and not ep.get("deprecated"):
                out.add(name)
    return frozenset(out)


MLFLOW_ARN_RE = re.compile(  # botocore TrackingServerArn/MlflowResourceArn; sagemaker-mlflow supports aws, aws-us-gov
    r"^arn:aws(-us-gov)?:sagemaker:[a-z0-9\-]+:\d{12}:mlflow-(tracking-server|app)/[a-zA-Z0-9](-*[a-zA-Z0-9]){0,255}$")
MLFLOW_SCHEMES = ("http", "https", "sqlite", "file", "databricks", "postgresql", "mysql", "mssql")


class Entrypoint(_Model):
    """What runs inside every training job."""

    builtin: Literal["reference-lm", "hf-causal-lm"] | None = Field(
        "reference-lm", description="Built-in trainer to run: `reference-lm`, a small decoder-only "
        "transformer LM on bytes; `hf-causal-lm`, a Hugging Face `transformers` causal LM built from a config "
        "(sizes from `model:`, `model_type` and other knobs in `hyperparameters:`; no weights downloaded; needs "
        "the `hf` extra). Set to null and give `source_dir` + `script` to bring your own.")
    source_dir: str | None = Field(
        None, description="Directory with your training code (relative to the spec file). bakeoff ships "
        "its runtime helper `bakeoff_runtime` beside it.")
    script: str | None = Field(None, description="Script inside `source_dir` to run, e.g. `train.py`.")
    mode: Literal["runtime", "script"] = Field(
        "runtime", description="`runtime`: the script reports through `bakeoff_runtime` (the built-in trainers "
        "do). `script`: an existing script run as it is, the way SageMaker's PyTorch estimator runs it "
        "(hyperparameters as arguments, SM_* variables); bakeoff measures it with an optimizer step hook and "
        "reads its metrics from what it prints (`script_mode`).")
    script_mode: ScriptMode = Field(default_factory=ScriptMode, description="Script mode's settings: metric "
                                    "regexes, argument style, seed, units per step.")
    allow_outside_spec_dir: bool = Field(
        False, description="Let `source_dir` (and local data channels) lie outside the spec file's directory "
        "tree, e.g. in a monorepo. Off by default: the folder is packed and uploaded, and `../../etc` must not be.")
    max_bundle_mb: Float = Field(50, gt=0, le=2048, description="Largest code bundle (MB) bakeoff packs from "
                                 "`source_dir`; put data in a data channel, not beside the script.")

    @field_validator("script")
    @classmethod
    def _script_path(cls, v: str | None) -> str | None:
        # It names a file in every job's command line: a plain relative path, nothing a shell could read.
        if v is not None and (not SCRIPT_RE.fullmatch(v) or v.startswith("/") or ".." in v.split("/")):
            raise ValueError(f"script {v!r} must be a relative path inside source_dir made of letters, digits and "
                             "._/- (no spaces, no '..'); rename the file, e.g. train.py")
        return v

    @model_validator(mode="after")
    def _one_kind(self):
        if self.source_dir or self.script:
            if not (self.source_dir and self.script):
                raise SpecFieldError("script" if self.source_dir else "source_dir",
                                     "a custom entrypoint needs both `source_dir` and `script`")
            if self.builtin is not None and "builtin" in self.model_fields_set:
                raise SpecFieldError("builtin", "give either `builtin` or `source_dir` + `script`, not both")
            object.__setattr__(self, "builtin", None)
        elif self.builtin is None:
            raise SpecFieldError("builtin", "set `builtin: reference-lm` or give `source_dir` + `script`")
        if self.mode == "script" and self.builtin is not None:
            raise SpecFieldError("mode", "script mode runs your own script: give `source_dir` + `script`")
        if self.mode != "script" and self.script_mode != ScriptMode():
            raise SpecFieldError("script_mode", "`script_mode` settings need `mode: script`")
        return self


class ModelConfig(_Model):
    """Shape of the built-in reference LM (ignored by custom scripts, which get `hyperparameters`)."""

    d_model: Int = Field(128, ge=8, le=4096, description="Width of the residual stream.")
    n_layers: Int = Field(2, ge=1, le=64, description="Number of transformer blocks.")
    n_heads: Int = Field(4, ge=1, le=64, description="Attention heads per block; must divide `d_model`.")
    mlp_ratio: Int = Field(4, ge=1, le=16, description="MLP hidden width as a multiple of `d_model`.")
    dropout: Float = Field(0.0, ge=0.0, lt=1.0, description="Dropout probability (0 keeps runs comparable).")

    @model_validator(mode="after")
    def _heads_divide(self):
        if self.d_model % self.n_heads:
            raise SpecFieldError("n_heads", f"n_heads={self.n_heads} must divide d_model={self.d_model}")
        return self


class Optimizer(_Model):
    """The optimizer and schedule, declared once and used by every leg."""

    name: Literal["adamw", "sgd"] = Field("adamw", description="Optimizer.")
    lr: Float = Field(3e-3, gt=0, le=100, description="Peak learning rate.")
    weight_decay: Float = Field(0.1, ge=0, description="Decoupled weight decay on matrices.")
    beta1: Float = Field(0.9, ge=0, lt=1, description="Adam beta1 (momentum for sgd).")
    beta2: Float = Field(0.95, ge=0, lt=1, description="Adam beta2.")
    warmup_steps: Int = Field(20, ge=0, description="Linear warm-up steps.")
    schedule: Literal["cosine", "constant"] = Field("cosine", description="Decay after warm-up.")
    min_lr_ratio: Float = Field(0.1, ge=0, le=1, description="Final LR as a fraction of peak (cosine).")
    grad_clip: Float = Field(1.0, ge=0, description="Clip the global gradient norm to this (0 = off).")


class Training(_Model):
    """What is held equal across legs: the fairness contract of the bake-off."""

    global_batch_size: Int = Field(32, ge=1, le=MAX_GLOBAL_BATCH, description="Sequences per optimizer step, "
                                   "summed over all devices. Per-device batch and gradient accumulation are "
                                   "derived per leg.")
    sequence_length: Int = Field(128, ge=8, le=65536, description="Tokens per sequence.")
    max_steps: Int | None = Field(200, ge=1, le=MAX_STEPS, description="Optimizer steps. Give this or "
                                  "`total_tokens` (then it is derived from that, and null here).")
    total_tokens: Int | None = Field(None, ge=1, le=10**15, description="Tokens to train on; converted to steps "
                                     "(rounded up) as total_tokens / (global_batch_size x sequence_length).")
    max_per_device_batch_size: Int | None = Field(
        None, ge=1, description="Largest micro-batch one device takes; more goes to gradient accumulation. "
        "Default: no limit.")
    optimizer: Optimizer = Field(default_factory=Optimizer, description="Optimizer and LR schedule.")
    eval_interval: Int = Field(50, ge=0, description="Steps between validation passes (0 = only at the end).")
    eval_batches: Int = Field(8, ge=1, description="Validation batches per pass (fixed windows, same on every leg).")
    eval_batch_size: Int = Field(16, ge=1, description="Sequences per validation batch.")
    log_interval: Int = Field(10, ge=1, description="Steps between logged (device-synchronising) metrics.")
    checkpoint_interval: Int = Field(0, ge=0, description="Steps between checkpoints to the checkpoint "
                                     "dir (0 = none, except when a leg uses managed spot: then every tenth of "
                                     "the run, so an interrupted job resumes instead of starting over).")
    divergence_factor: Float = Field(4.0, gt=1, description="Stop a run whose loss exceeds this multiple "
                                     "of its first loss (NaN/inf always stops it).")

    @model_validator(mode="after")
    def _steps_or_tokens(self):
        if self.total_tokens is not None and "max_steps" not in self.model_fields_set:
            object.__setattr__(self, "max_steps", None)  # the default 200 gives way to total_tokens
        elif self.max_steps is None and self.total_tokens is None:
            object.__setattr__(self, "max_steps", 200)
        elif self.max_steps is not None and self.total_tokens is not None:
            raise SpecFieldError("total_tokens", "give `max_steps` or `total_tokens`, not both")
        return self

    @property
    def steps(self) -> int:
        if self.max_steps is not None:
            return self.max_steps
        per_step = self.global_batch_size * self.sequence_length
        assert self.total_tokens is not None  # the validator requires one of the two
        return -(-self.total_tokens // per_step)


class Parity(_Model):
    """How quality parity is decided: the confidence interval of the difference between each
    leg and the baseline (paired by seed where both completed) against a margin fixed before the runs."""

    metric: str = Field("val_loss", description="Metric from each job's summary to compare (e.g. val_loss).")
    direction: Literal["minimize", "maximize"] = Field("minimize", description="Which way is better.")
    test: Literal["equivalence", "non_inferiority"] = Field(
        "equivalence", description="`equivalence`: pass when the difference is shown to lie within +/- margin "
        "(two one-sided tests). `non_inferiority`: pass when the leg is shown to be no worse than the baseline "
        "by more than the margin; a leg better than the baseline never fails.")
    margin: Float = Field(0.05, allow_inf_nan=False, description="Equivalence margin, in metric units "
                          "(or relative, see margin_type). Fix it before the runs: changing it afterwards needs "
                          "`bakeoff run --rule-change`.")
    margin_type: Literal["absolute", "relative"] = Field(
        "absolute", description="`absolute` in metric units, or `relative` to the baseline mean.")
    alpha: Float = Field(0.05, gt=0, lt=0.5, description="Significance level of each one-sided test over the "
                         "whole design (see `design`): a fixed design reads the 1 - 2 alpha confidence interval.")
    design: Literal["two_stage", "fixed"] = Field(
        "two_stage", description="`two_stage`: the seeds run are stage 1 of a design that plans one continuation: "
        "stage 1 reads its interval at the Pocock level (0.0304 one-sided at alpha 0.05), and if it is "
        "inconclusive a run of fresh seeds of the same question is stage 2, decided on the inverse-normal "
        "combination of both stages (alpha kept exactly, the first seeds' data kept). `fixed`: decided once at "
        "the full alpha, with no second stage (a later attempt at the same question needs --fresh-start).")
    power: Float = Field(0.8, ge=0.5, le=0.99, description="Probability of a decisive verdict that an "
                         "inconclusive result's seed recommendation (and `validate --from`) aims for.")
    baseline: str | None = Field(None, description="Leg the others are compared with. Default: the last "
                                 "GPU leg, else the last leg.")
    target: Float | None = Field(None, allow_inf_nan=False, description="Value of the metric a run must "
                                 "reach to count as converged, for steps- and cost-to-target. Default: the worst "
                                 "value still at parity with the baseline.")
    resolution: Float | None = Field(None, gt=0, allow_inf_nan=False, description="The smallest step the metric "
                                     "moves in (e.g. 0.001 for accuracy on 1,000 examples). The spread of the "
                                     "per-seed differences is never taken below what rounding to this step alone "
                                     "gives, so equal differences never decide on a point interval. Default: the "
                                     "finest decimal the runs' values carry (set it for a step that is not a "
                                     "power of ten, such as 1/300).")

    @field_validator("margin")
    @classmethod
    def _positive(cls, v: float) -> float:
        if not v > 0:
            raise ValueError(f"margin must be positive, got {v}; parity is decided within +/- margin")
        return v


class Mlflow(_Model):
    """Where runs are logged. Locally the default is a sqlite store under the run dir."""

    tracking_uri: str | None = Field(None, description="MLflow tracking URI, or a SageMaker managed MLflow "
                                     "tracking server ARN. Default locally: sqlite under the run dir.")
    experiment: str | None = Field(None, max_length=500, description="Experiment name. Default: `bakeoff-<name>`.")
    enabled: bool = Field(True, description="Log to MLflow at all.")

    @field_validator("tracking_uri")
    @classmethod
    def _uri(cls, v: str | None) -> str | None:
        if v is None:
            return v
        if v.startswith("arn:"):
            if not MLFLOW_ARN_RE.match(v):
                raise ValueError(f"{v!r} is not a SageMaker MLflow tracking server ARN (arn:aws:sagemaker:REGION:"
                                 "ACCOUNT:mlflow-tracking-server/NAME; the sagemaker-mlflow client supports the aws "
                                 "and aws-us-gov partitions)")
            return v
        scheme = v.split("://", 1)[0] if "://" in v else ""
        if scheme.split("+")[0] not in MLFLOW_SCHEMES:
            raise ValueError(f"{v!r} is not an MLflow tracking URI (http(s)://HOST, sqlite:///PATH, databricks, "
                             "or a SageMaker tracking server ARN)")
        return v


class Storage(_Model):
    """S3 locations for artifacts and compile caches (used by SageMaker runs)."""

    bucket: str | None = Field(None, description="S3 bucket for code, outputs and compile caches. "
                               "Default: a pipeline parameter.")
    prefix: str = Field("bakeoff", description="Key prefix under the bucket.")
    region: str = Field("us-east-1", description="AWS region the pipeline runs in: it picks the image registry "
                        "(AWS publishes its Deep Learning Containers from a different account in some regions), "
                        "and SageMaker pulls images only from its own region.")

    @field_validator("region")
    @classmethod
    def _region(cls, v: str) -> str:
        known = sagemaker_regions()
        if v not in known:
            near = difflib.get_close_matches(v, sorted(known), n=1, cutoff=0.6)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise ValueError(f"{v!r} is not an AWS region where SageMaker runs{hint}")
        return v

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, v):
        if v is not None and (v.startswith("s3://") or not BUCKET_RE.match(v)):
            raise ValueError(f"bucket {v!r} is not a bucket name (give the name, not an s3:// URI)")
        return v

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, v: str) -> str:
        v = v.strip("/")
        if not re.match(r"^[A-Za-z0-9!_.*'()\-/]{1,200}$", v):
            raise ValueError(f"prefix {v!r} has characters that are unsafe in S3 keys")
        return v


SUBNET_RE = re.compile(r"^subnet-[0-9a-f]{8,17}$")
SECURITY_GROUP_RE = re.compile(r"^sg-[0-9a-f]{8,17}$")
# botocore sagemaker KmsKeyId: up to 2048 of [a-zA-Z0-9:/_-]: a key id, key ARN, alias or alias ARN.
KMS_KEY_RE = re.compile(r"^(arn:aws[a-z\-]*:kms:[a-z0-9\-]+:\d{12}:(key|alias)/[a-zA-Z0-9/_\-]+|alias/[a-zA-Z0-9/_\-]+|"
                        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|mrk-[0-9a-f]{32})$")


class Security(_Model):
    """Network placement and encryption of the SageMaker jobs (CreateTrainingJob's VpcConfig,
    EnableNetworkIsolation, EnableInterContainerTrafficEncryption and KMS keys; the Evaluate
    step gets the same VPC, encryption and keys)."""

    subnets: list[str] = Field(default_factory=list, max_length=16, description="VPC subnet ids the jobs run in "
                               "(1-16, with security_group_ids). Private subnets need an S3 endpoint, and a NAT or "
                               "a `wheels/` directory in the code bundle for MLflow.")
    security_group_ids: list[str] = Field(default_factory=list, max_length=5, description="VPC security groups "
                                          "of the jobs (1-5, with subnets). Multi-node legs need one that lets the "
                                          "group's members reach each other on all ports.")
    network_isolation: bool = Field(False, description="Training jobs get no network access at all "
                                    "(EnableNetworkIsolation): they cannot log to MLflow, so the Evaluate step "
                                    "back-fills their runs from their metrics. The Evaluate step itself is not "
                                    "isolated: it reads the jobs' outputs from S3.")
    encrypt_inter_container_traffic: bool = Field(False, description="Encrypt traffic between the instances "
                                                  "of a multi-node job (slower collectives; EnableInterContainer"
                                                  "TrafficEncryption).")
    volume_kms_key: str | None = Field(None, description="KMS key for the jobs' EBS volumes. Instance types with "
                                       "local NVMe storage cannot take one (SageMaker refuses it); their volumes "
                                       "are encrypted by the instance's hardware, and the key is left off them.")
    output_kms_key: str | None = Field(None, description="KMS key for what the jobs write to S3.")

    @field_validator("subnets")
    @classmethod
    def _subnets(cls, v: list[str]) -> list[str]:
        for item in v:
            if not SUBNET_RE.match(item):
                raise ValueError(f"{item!r} is not a subnet id (subnet-0123456789abcdef0)")
        return v

    @field_validator("security_group_ids")
    @classmethod
    def _groups(cls, v: list[str]) -> list[str]:
        for item in v:
            if not SECURITY_GROUP_RE.match(item):
                raise ValueError(f"{item!r} is not a security group id (sg-0123456789abcdef0)")
        return v

    @field_validator("volume_kms_key", "output_kms_key")
    @classmethod
    def _kms(cls, v: str | None) -> str | None:
        if v is not None and (len(v) > 2048 or not KMS_KEY_RE.match(v)):
            raise ValueError(f"{v!r} is not a KMS key id, key ARN, alias or alias ARN")
        return v

    @model_validator(mode="after")
    def _vpc_pair(self):
        if bool(self.subnets) != bool(self.security_group_ids):
            missing = "security_group_ids" if self.subnets else "subnets"
            raise SpecFieldError(missing, "a VPC needs both subnets and security_group_ids")
        return self

    def vpc_config(self) -> dict[str, list[str]] | None:
        if not self.subnets:
            return None
        return {"SecurityGroupIds": list(self.security_group_ids), "Subnets": list(self.subnets)}


class Data(_Model):
    """Data channels. Omit `channels` for the built-in trainer to use its built-in corpus."""

    channels: dict[str, str] = Field(default_factory=dict, description="Channel name -> local path (relative "
                                     "to the spec file) or s3:// URI. The reference trainer reads `train` "
                                     "and `validation`.")

    @field_validator("channels")
    @classmethod
    def _uris(cls, v: dict[str, str]) -> dict[str, str]:
        for name, uri in v.items():
            if not re.match(r"^[A-Za-z0-9\.\-_]{1,64}$", name):
                raise SpecFieldError(name, f"channel name {name!r} must be 1-64 letters, digits, '.', '-', '_'")
            if uri.startswith("s3:") and not S3_URI_RE.match(uri):
                raise SpecFieldError(name, f"malformed S3 URI {uri!r}; expected s3://bucket/key")
        return v


class PreflightStep(_Model):
    """An optional first pipeline step: preflight on a cheap CPU instance, so a bake-off
    that would waste Trainium hours stops before any trn job starts."""

    enabled: bool = Field(False, description="Add the preflight step to the SageMaker pipeline.")
    instance_type: str = Field("ml.m5.2xlarge", description="CPU instance it runs on (PyTorch/XLA's CPU device).")
    steps: Int = Field(6, ge=3, le=100, description="Training steps to run (the first two compile).")

    @field_validator("instance_type")
    @classmethod
    def _cpu(cls, v: str) -> str:
        found = lookup_instance(v)
        if found is None or found[0].name != "cpu":
            raise ValueError(f"preflight runs on a CPU instance (ml.m5.*, ml.c5.*), not {v!r}")
        return v


_JSON_SCHEMA_BOUNDS = {"ge": "minimum", "le": "maximum", "gt": "exclusiveMinimum", "lt": "exclusiveMaximum"}


def _standard_bounds(node: Any) -> Any:
    """pydantic writes the bounds of an optional annotated number as its own ge/le/gt/lt, which
    JSON Schema (and so an editor) ignores: name them as JSON Schema does."""
    if isinstance(node, dict):
        numeric = node.get("type") in ("integer", "number")
        return {(_JSON_SCHEMA_BOUNDS.get(k, k) if numeric and isinstance(v, (int, float)) else k): _standard_bounds(v)
                for k, v in node.items()}
    if isinstance(node, list):
        return [_standard_bounds(v) for v in node]
    return node


@dataclass(frozen=True)
class Provenance:
    """Where a spec came from: its file and the line of each field (for errors found after validation).
    A spec made from another (overrides, more seeds, another region, derived legs) keeps its source's."""

    path: Path | None = None
    lines: Mapping[tuple, int] = field(default_factory=dict)


class BakeoffSpec(_Model):
    """A bake-off: the same training code on two or more legs, several seeds each."""

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return _standard_bounds(super().model_json_schema(*args, **kwargs))

    name: str = Field(..., description="Bake-off name (letters, digits, -): names the pipeline and runs.")
    description: str = Field("", description="Free text shown in reports.")
    entrypoint: Entrypoint = Field(default_factory=Entrypoint, description="What every job runs.")
    model: ModelConfig = Field(default_factory=ModelConfig, description="Reference LM shape.")
    training: Training = Field(default_factory=Training, description="Held equal across legs.")
    hyperparameters: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description="Extra hyperparameters passed to every job (for custom scripts). In "
        "script mode each becomes `--key value` as SageMaker passes it (a boolean as `True`/`False`: an argparse "
        "`store_true` flag goes in `arguments:` instead).")
    arguments: list[str] = Field(default_factory=list, max_length=90, description="Script mode: command-line "
                                 "arguments every leg's script gets, after the hyperparameters and before a leg's "
                                 "own `arguments`, e.g. `[--accel]` for a `store_true` flag.")
    data: Data = Field(default_factory=Data, description="Data channels.")
    legs: list[Leg] = Field(..., description="Two or more legs.")
    seeds: Int | list[Int] = Field(
        3, description=f"Replicates per leg: a count (seeds 0..n-1) or explicit seeds (at most {MAX_SEEDS}).")
    parity: Parity = Field(default_factory=Parity, description="The parity rule.")
    mlflow: Mlflow = Field(default_factory=Mlflow, description="MLflow tracking.")
    storage: Storage = Field(default_factory=Storage, description="S3 locations.")
    security: Security = Field(default_factory=Security, description="VPC, network isolation and KMS keys of "
                               "the SageMaker jobs.")
    preflight: PreflightStep = Field(default_factory=PreflightStep, description="Optional preflight pipeline step.")
    decision: Decision | None = Field(None, description="The production run the bake-off decides: its size, "
                                      "instances, runs per period, how each leg is bought and what porting costs. "
                                      "The evaluation projects each leg's cost per run and the saving, with "
                                      "intervals, and the break-even (`bakeoff project` takes the same as flags).")
    max_parallel_steps: Int = Field(
        8, ge=1, le=1000, description="SageMaker runs at most this many of the pipeline's steps at once "
        "(ParallelismConfiguration.MaxParallelExecutionSteps); the others queue. A new account's training quotas "
        "are small, and a job over one is retried (SageMaker.RESOURCE_LIMIT) rather than failing the execution. "
        "Local runs are not affected.")
    _provenance: Provenance = PrivateAttr(default_factory=lambda: Provenance())
    # Set on the spec bakeoff.pipelines.spec.derived.expand() returns: the spec as declared (what is hashed).
    _declared: BakeoffSpec | None = PrivateAttr(None)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME_RE.match(v) or len(v) > 40:
            raise ValueError(f"name {v!r} must be 1-40 letters, digits or '-' (it names a SageMaker pipeline)")
        return v

    @field_validator("seeds", mode="before")
    @classmethod
    def _seed_list_length(cls, v):
        # Before anything else reads a long list (5,000 seeds took 25 s and 500 MB to refuse).
        if isinstance(v, list) and len(v) > MAX_SEEDS:
            raise ValueError(f"seeds lists {len(v):,} seeds; at most {MAX_SEEDS} (the cap on a count too)")
        return v

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, v):
        if isinstance(v, int):
            if not 1 <= v <= MAX_SEEDS:
                raise ValueError(f"seeds must be between 1 and {MAX_SEEDS}, got {v}")
            return v
        if not v:
            raise ValueError("seeds list is empty")
        if len(v) > MAX_SEEDS:  # the count's cap, for a list too
            raise ValueError(f"seeds lists {len(v)} seeds; at most {MAX_SEEDS}")
        if len(set(v)) != len(v):
            raise ValueError(f"seeds list has duplicates: {v}")
        if any(s < 0 for s in v):
            raise ValueError("seeds must be non-negative")
        return v

    @model_validator(mode="after")
    def _legs(self):
        if len(self.legs) < 2:
            raise SpecFieldError("legs", f"a bake-off needs at least two legs, got {len(self.legs)}")
        seen: dict[str, int] = {}
        for i, leg in enumerate(self.legs):
            if leg.name in seen:
                raise SpecFieldError(("legs", i, "name"), f"duplicate leg name {leg.name!r} "
                                     f"(also legs[{seen[leg.name]}]); leg names must be unique")
            seen[leg.name] = i
            for seed in self.seed_list:
                for step in (step_name(leg.name, seed), precompile_step(leg.name)):
                    if not STEP_NAME_RE.match(step):
                        raise SpecFieldError(("legs", i, "name"), f"step name {step!r} does not match "
                                             "^[A-Za-z0-9-_]{1,64}$; shorten the leg name")
            devices = leg.devices
            if self.entrypoint.mode != "script" and self.training.global_batch_size % devices:
                raise SpecFieldError(("training", "global_batch_size"),
                                     f"global_batch_size={self.training.global_batch_size} is not divisible by "
                                     f"the {devices} devices of leg {leg.name!r} ({leg.instance_count} x "
                                     f"{leg.instance_type}); use a multiple of {devices}")
        check_derived(self)  # the sweep's and ablation's legs: named, sized, batched
        self._script_mode_fits()
        region = self.storage.region
        for i, leg in enumerate(self.legs):
            if leg.image:
                from bakeoff.estimators.images import image_region

                where = image_region(leg.image)
                if where and where != region:
                    raise SpecFieldError(("legs", i, "image"), f"image is in {where} but the pipeline runs in "
                                         f"{region} (storage.region); SageMaker pulls images only from its own "
                                         "region: push the image to that region's registry")
            elif not row(leg.backend_name).no_image:  # a default image: AWS's, from this region's registry
                from bakeoff.estimators.images import REGISTRY_ACCOUNTS

                if region not in REGISTRY_ACCOUNTS:
                    raise SpecFieldError(("legs", i, "image"), f"AWS publishes no Deep Learning Containers in "
                                         f"{region}; give this leg an `image:` from a registry in that region")
        if self.security.network_isolation:
            for i, leg in enumerate(self.legs):
                if leg.precompile:
                    raise SpecFieldError(("legs", i, "precompile"), "precompile fills the S3 compile cache, which "
                                         "an isolated job (security.network_isolation) cannot reach: leave one off")
        if self.parity.baseline is not None and self.parity.baseline not in seen:
            raise SpecFieldError(("parity", "baseline"), f"baseline {self.parity.baseline!r} is not a leg "
                                 f"({', '.join(seen)})")
        if self.decision is not None:
            for kind in ("instances", "purchase"):
                for name in getattr(self.decision, kind):
                    if name not in seen:
                        raise SpecFieldError(("decision", kind, name), f"{name!r} is not a leg ({', '.join(seen)})")
        if self.entrypoint.builtin and self.training.sequence_length > 4096:
            raise SpecFieldError(("training", "sequence_length"), "the reference LM supports sequence_length <= 4096")
        return self

    def _script_mode_fits(self) -> None:
        """What script mode can and cannot do, said before anything runs."""
        ep = self.entrypoint
        if ep.mode != "script":
            if self.arguments:
                raise SpecFieldError(("arguments",), "`arguments` are for `entrypoint.mode: script`; a Runtime "
                                     "script reads `hyperparameters` instead")
            for i, leg in enumerate(self.legs):
                if leg.arguments or (leg.local and leg.local.arguments):
                    given: tuple = ("legs", i, "arguments") if leg.arguments else ("legs", i, "local", "arguments")
                    raise SpecFieldError(given, "per-leg `arguments` are for `entrypoint.mode: script`; a Runtime "
                                         "script reads `hyperparameters` instead")
            return
        sm = ep.script_mode
        unreachable = self.parity_metric_problem()
        if unreachable:
            raise SpecFieldError(("parity", "metric"), unreachable)
        if sm.seed.argument and sm.seed.argument in self.hyperparameters:
            raise SpecFieldError(("hyperparameters", sm.seed.argument), f"{sm.seed.argument!r} carries the seed "
                                 "(entrypoint.script_mode.seed.argument): bakeoff sets it per job; remove it here")
        if self.preflight.enabled:
            raise SpecFieldError(("preflight", "enabled"), "the preflight step probes a Runtime script; in script "
                                 "mode run `bakeoff preflight` on a Runtime port, or leave the step off")
        for i, leg in enumerate(self.legs):
            if leg.ablation or leg.scaling:
                field = "ablation" if leg.ablation else "scaling"
                raise SpecFieldError(("legs", i, field), f"`{field}` derives legs by changing the precision or the "
                                     "batch bakeoff gives the script; a script-mode script sets both itself, so "
                                     "declare each variant as a leg of its own (with its arguments)")
            if leg.precompile:
                raise SpecFieldError(("legs", i, "precompile"), "precompile shortens a run by its `max_steps`, "
                                     "which a script-mode script does not take from bakeoff; leave it off")
            for arg in [*self.arguments, *leg.arguments]:
                if len(arg) > 256:  # botocore: TrainingContainerArgument is at most 256 characters
                    where: tuple = ("legs", i, "arguments") if arg in leg.arguments else ("arguments",)
                    raise SpecFieldError(where, f"an argument is {len(arg)} characters; "
                                         "SageMaker takes at most 256 per container argument")
            # botocore: AlgorithmSpecification.ContainerArguments holds at most 100, the script's name one of them
            if 1 + len(self.arguments) + len(leg.arguments) > 100:
                raise SpecFieldError(("legs", i, "arguments"), f"the script, `arguments` and leg {leg.name}'s own "
                                     f"make {1 + len(self.arguments) + len(leg.arguments)} container arguments; "
                                     "SageMaker takes at most 100")

    def parity_metric_problem(self, *, mlflow: bool | None = None, mlflow_off: str = "mlflow.enabled: false",
                              mlflow_on: str = "set mlflow.enabled: true") -> str | None:
        """In script mode, why no metric source its jobs read can give the parity metric, in one line that says
        what to declare; None when one can (or in Runtime mode, where bakeoff's Runtime reports it).

        `mlflow`: whether the jobs will have MLflow, None for what the spec says. A spec cannot know that a
        run turns it off (`bakeoff run --no-mlflow`), so such a run asks again, naming how it turned it off
        (`mlflow_off`) and how to keep it on (`mlflow_on`); the sources are the contract's
        (bakeoff_runtime.contract.script_mode.METRIC_SOURCE_RULES), the same the launcher reads."""
        if self.entrypoint.mode != "script":
            return None
        from bakeoff_runtime.contract.script_mode import METRIC_SOURCE_RULES, sources_giving

        sm, metric = self.entrypoint.script_mode, self.parity.metric
        settings = sm.settings(metric)
        if sources_giving(settings, metric, mlflow_enabled=self.mlflow.enabled if mlflow is None else mlflow):
            return None
        # Declared, and able to give it, were MLflow on: then turning MLflow on is the first fix.
        blocked = sources_giving(settings, metric, mlflow_enabled=True)
        names = [m.name for m in sm.metrics]
        declared = f" (declared: {', '.join(names)})" if names else ""
        fixes = [mlflow_on] if blocked else []
        fixes += [rule.hint.format(metric=metric, declared=declared) for rule in METRIC_SOURCE_RULES
                  if rule not in blocked]
        said = f"{', '.join(fixes[:-1])}, or {fixes[-1]}" if len(fixes) > 1 else fixes[0]
        if blocked:
            return (f"{blocked[0].switch} takes {metric!r} from {blocked[0].what}, but {mlflow_off} turns MLflow "
                    f"off and no other source gives it: {said}")
        return f"script mode reads metrics from the script's output: {said}"

    # --- derived ----------------------------------------------------------------------
    @property
    def seed_list(self) -> list[int]:
        return list(range(self.seeds)) if isinstance(self.seeds, int) else list(self.seeds)

    @property
    def experiment(self) -> str:
        return self.mlflow.experiment or f"bakeoff-{self.name}"

    @property
    def baseline(self) -> str:
        if self.parity.baseline:
            return self.parity.baseline
        gpu = [leg.name for leg in self.legs if row(leg.backend_name).default_baseline]
        return gpu[-1] if gpu else self.legs[-1].name

    def parity_rule(self) -> dict[str, Any]:
        """What decides the verdict, to be fixed before the data (the evaluation records it)."""
        p = self.parity
        return {"metric": p.metric, "direction": p.direction, "margin": p.margin, "margin_type": p.margin_type,
                "alpha": p.alpha, "test": p.test, "baseline": self.baseline}

    def leg(self, name: str) -> Leg:
        for leg in self.legs:
            if leg.name == name:
                return leg
        raise KeyError(name)

    @property
    def provenance(self) -> Provenance:
        return self._provenance

    def sourced(self, provenance: Provenance) -> BakeoffSpec:
        """This spec, carrying `provenance` (a loader's, or the spec it was made from); returns itself."""
        self._provenance = provenance
        return self

    def canonical(self) -> dict[str, Any]:
        """The spec as plain data with defaults filled in (what hashes are computed over). Where
        runs are logged is not what is measured: the MLflow tracking URI is left out (and the decision the result
        is read against), so a CDK
        stack that learns its tracking server's ARN at deploy time hashes the same spec; and a leg's
        `local:` block is this machine's alone, so the spec that runs here hashes as the one deployed."""
        return self.model_dump(mode="json", exclude={"description": True, "mlflow": {"tracking_uri"},
                                                     # what the result is read against, not what is measured
                                                     "decision": True,
                                                     # what only this machine's runs get (never deployed)
                                                     "legs": {"__all__": {"local"}}})
