"""A leg of the spec (one kind of hardware the same code runs on) and the sizes of its scaling sweep.
Below bakeoff.pipelines.spec.model and bakeoff.pipelines.spec.derived: the spec's validator checks the legs a sweep
derives with
scaling.check_derived, which validates them as Legs from here (bakeoff.pipelines.spec.model re-exports both)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from bakeoff.estimators import InstanceType, LegKind, instance_of, lookup_instance, suggest_instance
from bakeoff.estimators.registry import kind_for_backend
from bakeoff.pipelines.spec.fields import (
    IMAGE_RE,
    MAX_RUNTIME_S,
    NAME_RE,
    Backend,
    Float,
    Int,
    Precision,
    SpecFieldError,
    _Model,
    looks_like_secret,
    secret_findings,
)
from bakeoff_runtime.contract.backend_table import backends_where, row, spec_backend_help

# Why a secret never goes in `environment:`, said in each refusal (its SageMaker source quoted).
_ENVIRONMENT_IS_PUBLIC = (
    "a job's Environment is returned by DescribeTrainingJob and stored in the pipeline definition (botocore's "
    "SageMaker model, CreateTrainingJob.Environment: \"Do not include any security-sensitive information including "
    "account access IDs, secrets, or tokens in any environment fields\"): grant access through the execution role, "
    "or have the script read the value from AWS Secrets Manager")


class ScalingSize(_Model):
    """One more size a leg also runs at, for a scaling sweep: a set of jobs like any leg
    (every seed, the same parity check), named e.g. `trn1-x2` or `trn1-32xlarge`."""

    instance_type: str = Field(..., description="SageMaker training instance type of this size, of the leg's own "
                               "kind (its backend must run on it), e.g. ml.trn1.32xlarge.")
    instance_count: Int = Field(1, ge=1, le=64, description="Instances per training job at this size.")
    name: str | None = Field(None, description="Name of the derived leg (letters, digits, -). Default: the leg's "
                             "name plus `-x<count>` (same instance type), else the instance size (and family if it "
                             "differs) and `-x<count>` when >1, e.g. trn1-32xlarge-x2.")


class LocalOnly(_Model):
    """What only `bakeoff run` on this machine gives a leg's jobs: never compiled into the pipeline
    definition (nor into the spec hash), and printed with the run's other substitutions. For a script
    that insists on what this machine lacks, e.g. a default of `--device cuda` on a machine without a GPU."""

    arguments: list[str] = Field(default_factory=list, max_length=90, description="Script mode: arguments added "
                                 "after the leg's own, e.g. `[--device, cpu]` (argparse takes the last value given).")
    environment: dict[str, str] = Field(default_factory=dict, description="Environment over the leg's own, "
                                        "e.g. `{USE_TORCH_XLA: \"0\"}`.")


class Leg(_Model):
    """One kind of hardware the same training code runs on."""

    name: str = Field(..., description="Short name, used in step names, tags and reports (letters, digits, -).")
    instance_type: str = Field(..., description="SageMaker training instance type, e.g. ml.trn1.32xlarge.")
    instance_count: Int = Field(1, ge=1, le=64, description="Instances per training job.")
    backend: Backend | None = Field(None, description=spec_backend_help())
    image: str | None = Field(None, description="Training image URI. Default: a pinned AWS Deep Learning "
                              "Container for the backend.")
    precision: Precision = Field("bf16", description="`bf16` (autocast, fp32 master weights) or `fp32`.")
    compile: Literal["none", "torch_compile"] = Field(
        "none", description="Compile the model with torch.compile (cuda/cpu legs). XLA legs always compile.")
    environment: dict[str, str] = Field(default_factory=dict, description="Extra container environment.")
    arguments: list[str] = Field(default_factory=list, max_length=90, description="Script mode: command-line "
                                 "arguments only this leg's script gets, after the hyperparameters, e.g. "
                                 "`[--device, xla]` (what differs between legs is the porting cost).")
    hyperparameters: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description="Hyperparameters only this leg's jobs get, over the spec's own.")
    local: LocalOnly | None = Field(None, description="Arguments and environment for `bakeoff run` on this machine "
                                    "only, never deployed: for a script that insists on a device this machine "
                                    "lacks (the spec that passes locally is the spec that deploys).")
    volume_size_gb: Int = Field(100, ge=1, le=16384, description="EBS volume per instance, GB.")
    max_runtime_s: Int = Field(86_400, ge=1, le=MAX_RUNTIME_S, description="Stopping condition: max runtime per "
                               "job, seconds (SageMaker allows 28 days; accounts start with a 5-day quota). "
                               "Enforced locally too: the job is stopped and counted as lost.")
    precompile: bool = Field(False, description="trn legs: run neuron_parallel_compile (same launch, a few "
                             "steps) before this leg's training jobs so they start with a warm compile cache; "
                             "its metrics are excluded from every comparison.")
    managed_spot: bool | Literal["after_first_seed"] = Field(
        False, description="Use managed spot training (checkpoints to S3, resumes after interruption). "
        "`after_first_seed`: the leg's first seed runs on demand, so the first result (and its compile cache) "
        "does not wait on spot capacity, and every later seed (and every seed --until-decided adds) runs on spot. "
        "Spot legs are costed at on-demand prices unless price_per_hour says otherwise.")
    max_wait_s: Int | None = Field(None, ge=60, description="Spot only: max wait including interruptions, "
                                   "seconds (default 2 x max_runtime_s).")
    price_per_hour: Float | None = Field(None, gt=0, description="Override the instance's bundled on-demand "
                                         "price (USD per instance-hour).")
    collective_check: bool = Field(False, description="Before this leg's training jobs (at every size of its "
                                   "sweep), run a short step on its own instances that checks all-reduce and "
                                   "all-gather are exact at its world size and measures their bus bandwidth "
                                   "against the instance's published network figure; a wrong result stops this "
                                   "leg only. Not part of any metric.")
    scaling: list[ScalingSize] = Field(default_factory=list, max_length=8, description="Other sizes this leg "
                                       "also runs at (a scaling sweep): each becomes a derived leg with every seed, "
                                       "so throughput, efficiency, cost per unit and quality parity are reported "
                                       "per size. Locally sizes are emulated with as many processes as the machine "
                                       "takes (stated in the plan and report).")
    scaling_mode: Literal["strong", "weak"] = Field("strong", description="`strong`: the global batch is held at "
                                                    "every size (per-device batch shrinks as devices grow). `weak`: "
                                                    "the per-device batch of this leg is held, so the global batch "
                                                    "grows with the devices (and parity at other sizes compares a "
                                                    "different global batch).")
    ablation: Literal["precision"] | None = Field(None, description="`precision`: also run this leg in the other "
                                                  "precision (fp32 <-> bf16) as a derived leg `<leg>-fp32`/`<leg>-"
                                                  "bf16`, so a bf16 quality gap can be told from a port bug. Its "
                                                  "checks are reported, not counted in the verdict.")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME_RE.match(v) or len(v) > 64:
            raise ValueError(f"leg name {v!r} must be letters, digits or '-' (no leading/trailing '-')")
        return v

    @field_validator("instance_type")
    @classmethod
    def _instance(cls, v: str) -> str:
        if lookup_instance(v) is None:
            near = suggest_instance(v)
            hint = f"; did you mean {near!r}?" if near else "; run `bakeoff instances` for the list"
            raise ValueError(f"unknown instance type {v!r}{hint}")
        return v

    @field_validator("image")
    @classmethod
    def _image(cls, v: str | None) -> str | None:
        if v is not None and (not IMAGE_RE.match(v) or "/" not in v):
            raise ValueError(f"image {v!r} is not a registry image URI "
                             "(e.g. 123456789012.dkr.ecr.us-east-1.amazonaws.com/repo:tag)")
        return v

    @model_validator(mode="after")
    def _no_secrets_in_environment(self):
        """A secret by its name (HF_TOKEN, GITHUB_PAT, PGPASSWORD) or by its value (a token's format, a URL with
        a password: bakeoff.pipelines.spec.fields.SECRET_RULES), in the leg's environment or its local one."""
        places: list[tuple[tuple[str, ...], dict[str, str]]] = [(("environment",), self.environment)]
        if self.local:
            places.append((("local", "environment"), self.local.environment))
        for where, env in places:
            for key, value in env.items():
                if looks_like_secret(key):
                    raise SpecFieldError((*where, key), f"{key} looks like a secret; {_ENVIRONMENT_IS_PUBLIC}")
                found = secret_findings(value, most=1)
                if found:
                    raise SpecFieldError((*where, key), f"{key}'s value holds {found[0].kind} ({found[0].shown}); "
                                         f"{_ENVIRONMENT_IS_PUBLIC}")
        return self

    @model_validator(mode="after")
    def _backend_fits(self):
        kind, _ = instance_of(self.instance_type)
        if self.backend is None:
            object.__setattr__(self, "backend", kind.default_backend)
        elif not kind.supports(self.backend):
            where = ", ".join(kind_for_backend(self.backend)) or "no known instance"
            note = row(self.backend).instances_note
            extra = f" ({note})" if note else ""
            raise SpecFieldError("backend", f"backend {self.backend!r} cannot run on {self.instance_type} "
                                 f"({kind.name}: {', '.join(kind.backends)}){extra}; it runs on: {where}")
        if self.instance_count > 1:
            refusal = kind.multi_node_refusal(self.instance)
            if refusal:
                raise SpecFieldError("instance_count", refusal)
        if self.image is None:
            from bakeoff.estimators.images import NoDefaultImage, default_image

            try:
                default_image(self.backend_name)
            except NoDefaultImage as exc:
                raise SpecFieldError("image", str(exc)) from None
        if self.max_wait_s is not None and self.max_wait_s < self.max_runtime_s:
            raise SpecFieldError("max_wait_s", f"max_wait_s={self.max_wait_s} must be >= max_runtime_s="
                                 f"{self.max_runtime_s}")
        backend = row(self.backend_name)
        if self.precompile and not backend.torch_neuronx:
            neuronx = "/".join(backends_where(lambda r: r.torch_neuronx))
            raise SpecFieldError("precompile", f"precompile (neuron_parallel_compile) is for {neuronx} legs")
        if self.compile == "torch_compile" and not backend.eager:
            eager = "/".join(backends_where(lambda r: r.eager))
            raise SpecFieldError("compile", f"compile: torch_compile is for {eager} legs; {self.backend} "
                                 "legs are compiled by XLA already")
        return self

    @property
    def kind(self) -> LegKind:
        return instance_of(self.instance_type)[0]

    @property
    def instance(self) -> InstanceType:
        return instance_of(self.instance_type)[1]

    @property
    def backend_name(self) -> str:
        """The backend, filled in from the instance kind when the spec left it out."""
        return self.backend or self.kind.default_backend

    @property
    def devices(self) -> int:
        return self.instance.devices * self.instance_count
