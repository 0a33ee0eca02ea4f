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
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bakeoff.pipelines.errors import SpecError, words
from bakeoff.pipelines.names import pipeline_name as _pipeline_name
from bakeoff.pipelines.params import REGION, ROLE_ARN
from bakeoff.pipelines.plan.corpus import prepare_corpus
from bakeoff.pipelines.plan.model import Plan, build_plan
from bakeoff.pipelines.spec.loader import spec_base_dir
from bakeoff.pipelines.spec.model import ROLE_ARN_RE, BakeoffSpec, Provenance
from bakeoff.pipelines.steps.request import CODE_ARCHIVE, Compilation, StepInputs, data_parameter_name, s3
from bakeoff_runtime import contract
from bakeoff_runtime.contract.rule import MARGIN_PARAMETER

DEFINITION_VERSION = "2020-12-01"
DEFAULT_BUCKET = "bakeoff-artifacts"
# A placeholder that says what it is; `deploy --role` (or CDK) puts the real role in.
PLACEHOLDER_ROLE = "arn:aws:iam::000000000000:role/bakeoff-sagemaker-execution-role"


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


def _channel_assets(name: str, path: Path, bucket: str, prefix: str) -> tuple[str, list[Asset]]:
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    blobs = [(f.relative_to(path).as_posix() if path.is_dir() else f.name, f.read_bytes()) for f in files]
    listing = "".join(f"{n}\0{hashlib.sha256(b).hexdigest()}\n" for n, b in blobs)
    key_root = f"{prefix}/data/{hashlib.sha256(listing.encode()).hexdigest()[:32]}/{name}"
    return s3(bucket, key_root) + "/", [Asset(f"{key_root}/{n}", b) for n, b in blobs]


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
        from bakeoff.pipelines.plan.bundle import inside, is_secret
        from bakeoff.pipelines.spec.loader import locate

        file, line = locate(spec, ("data", "channels", name))
        try:
            path = inside(base_dir, uri, spec.entrypoint.allow_outside_spec_dir, f"data.channels.{name}")
        except SpecError as exc:
            raise SpecError(exc.message, file=file, line=line, field=exc.field) from None
        if not path.exists():
            raise SpecError(f"channel {name!r}: {path} does not exist", file=file, line=line,
                            field=f"data.channels.{name}")
        # By name, and by where in the channel's folder it sits (.kube/config, .config/gh/hosts.yml): the same
        # lists as the code bundle's (pipelines/plan/bundle.py). Not by content: data is data (a corpus of code
        # holds token-shaped strings).
        members = {path.name: path} if path.is_file() else {p.relative_to(path).as_posix(): p for p in path.rglob("*")}
        secrets = [rel for rel, p in members.items() if is_secret(p.name, rel)]
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


def _with_region(spec: BakeoffSpec, region: str) -> BakeoffSpec:
    """The spec in another region, validated again (its images must be in that region)."""
    from pydantic import ValidationError

    from bakeoff.pipelines.spec.loader import format_validation_error

    data = spec.model_dump(mode="json")
    data["storage"]["region"] = region
    try:
        moved = BakeoffSpec.model_validate(data)
    except ValidationError as exc:
        raise format_validation_error(exc, words(REGION.given(region)), {}) from None
    return moved.sourced(Provenance(spec.provenance.path))  # the lines are the file's, not the moved spec's


def compile_pipeline(spec: BakeoffSpec, *, base_dir: Path | None = None, bucket: str | None = None,
                     role_arn: str | None = None, region: str | None = None,
                     design: dict[str, Any] | None = None) -> CompiledPipeline:
    """The SageMaker pipeline definition of `spec` and the assets it reads from S3; `design`: a round's
    sequential design, which the Evaluate step's config carries (more_seeds.round_pipeline)."""
    if region and region != spec.storage.region:
        spec = _with_region(spec, region)
    return compile_plan(build_plan(spec, base_dir or spec_base_dir(spec)), base_dir=base_dir, bucket=bucket,
                        role_arn=role_arn, design=design)


def compile_plan(plan: Plan, *, base_dir: Path | None = None, bucket: str | None = None,
                 role_arn: str | None = None, preflight: tuple[str, int] | None = None,
                 data_channels: dict[str, str] | None = None,
                 design: dict[str, Any] | None = None) -> CompiledPipeline:
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
                        field=ROLE_ARN)
    prefix = spec.storage.prefix
    shash = plan.spec_hash

    archive = plan.bundle.tar_gz()
    code_key = f"{prefix}/code/{hashlib.sha256(archive).hexdigest()}/{CODE_ARCHIVE}"
    code_asset = Asset(code_key, archive)
    code_uri = s3(bucket, code_key)
    if data_channels is None:
        data, data_assets = _data_channels(spec, base_dir, bucket, prefix)
    else:
        data, data_assets = dict(sorted(data_channels.items())), []
    inputs = StepInputs(bucket=bucket, prefix=prefix, role=role, code_uri=code_uri, data=data,
                        defs=metric_definitions(spec), shash=shash)

    # Each kind of step from its module (pipelines/steps/), in COMPILED's order: each appends its steps
    # and wires its own dependencies.
    from bakeoff.pipelines import steps  # here: bakeoff.pipelines.steps' kinds import this package's expressions

    built = Compilation(plan, inputs, preflight, design)
    for kind in steps.COMPILED:
        kind.compile(built)
    parameters: list[dict[str, Any]] = [{"Name": data_parameter_name(name), "Type": "String", "DefaultValue": uri}
                                        for name, uri in data.items()]
    parameters += [
        {"Name": "MaxSteps", "Type": "Integer", "DefaultValue": spec.training.steps},
        {"Name": MARGIN_PARAMETER, "Type": "Float", "DefaultValue": spec.parity.margin},
    ]
    definition = {
        "Version": DEFINITION_VERSION,
        "Metadata": {},
        "Parameters": parameters,
        "Steps": built.steps,
    }
    assets = tuple(sorted([code_asset, *(Asset(k, b) for k, b in built.assets), *data_assets], key=lambda a: a.key))
    return CompiledPipeline(pipeline_name(spec), definition, assets, bucket, role, spec.max_parallel_steps)


def synth_json(spec: BakeoffSpec, **kwargs) -> str:
    """The definition as `bakeoff synth` writes it."""
    return compile_pipeline(spec, **kwargs).to_json(indent=2)
