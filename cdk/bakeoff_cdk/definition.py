"""bakeoff's own compiler, in the stack's region, with CDK tokens where the bucket,
role and MLflow server go.

The compiler is pure and knows nothing of CDK: it compiles for the stack's region with
sentinel values that are valid in every check, and the sentinels are then replaced by
tokens. So `cdk synth` and `bakeoff synth` cannot disagree: after token substitution
the template's definition is `compile_pipeline(spec, bucket=B, role_arn=R, region=REGION)`
byte for byte. With the construct's MLflow server the evaluation config's key is the
stack's own (it is rendered per stack); the spec hash leaves the tracking URI out, so it
is the same as the CLI's.

No sentinel survives synthesis. Where a sentinel sits in the definition or in an asset
(the evaluation config names the MLflow server), it becomes either a CloudFormation
token (the inline definition) or a deploy-time marker of CDK's BucketDeployment whose
value is the token (the definition in S3, the evaluation config): one marker per
distinct value, so the template carries three small markers and never the definition.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from aws_cdk import Fn, Stack, Token

from bakeoff.estimators.images import image_region
from bakeoff.pipelines.errors import SpecError
from bakeoff.pipelines.sagemaker.cdk.placeholders import (
    BUCKET_SENTINEL,
    SENTINEL_ACCOUNT,
    mlflow_sentinel,
    role_sentinel,
)
from bakeoff.pipelines.sagemaker.cdk.placeholders import TAG as _TAG
from bakeoff.pipelines.sagemaker.cdk.reads import all_steps, image_uris  # noqa: F401 - kept importable from here
from bakeoff.pipelines.sagemaker.compiler import CompiledPipeline, compile_pipeline
from bakeoff.pipelines.sagemaker.validate import check_definition
from bakeoff.pipelines.spec.model import BakeoffSpec, sagemaker_regions

try:  # the compiler's own bound, where it has one
    from bakeoff.pipelines.sagemaker.validate import MAX_DEFINITION_CHARS
except ImportError:  # pragma: no cover - CreatePipeline.PipelineDefinition: 1-1048576 (botocore sagemaker model)
    MAX_DEFINITION_CHARS = 1_048_576

# Every placeholder the construct ever writes contains one of these; the tests look for them
# in the template and the deployed assets.
PLACEHOLDER_MARKS = (BUCKET_SENTINEL, _TAG, "role-sentinel-7f3a", f":{SENTINEL_ACCOUNT}:", f"::{SENTINEL_ACCOUNT}:")
MARKER = "<<marker:0xbaba:{}>>"  # CDK BucketDeployment's deploy-time marker format (aws-s3-deployment render-data)


def stack_region(stack: Stack, spec: BakeoffSpec) -> str:
    """The region the pipeline is compiled for: the stack's, which must be concrete and
    agree with the spec's.

    * An environment-agnostic stack (region an unresolved token) is refused: the images,
      their ECR grants and the registry account all depend on the region, and SageMaker
      pulls images only from its own region.
    * A spec that names `storage.region` explicitly must name the stack's region; a spec
      that leaves it at its default is compiled for the stack's region (the compiler
      validates it again there, so an explicit `image:` in another region is refused).
    """
    region = stack.region
    if Token.is_unresolved(region):
        raise SpecError(f"stack {stack.node.path!r} has no concrete region, so bake-off {spec.name!r} cannot pick "
                        "its images (SageMaker pulls them only from its own region); give the stack "
                        "env=Environment(region=...) (the app: -c region=REGION, CDK_DEFAULT_REGION or an AWS "
                        "profile with a region)", field="region")
    if region not in sagemaker_regions():
        raise SpecError(f"stack {stack.node.path!r} deploys to {region!r}, which is not a region where SageMaker "
                        "runs", field="region")
    explicit = "storage" in spec.model_fields_set and "region" in spec.storage.model_fields_set
    if explicit and spec.storage.region != region:
        raise SpecError(f"the spec runs in {spec.storage.region} but stack {stack.node.path!r} deploys to {region}; "
                        f"deploy the stack to {spec.storage.region}, or drop storage.region from the spec to compile "
                        "it for the stack's region", field="storage.region")
    return region


@dataclass(frozen=True)
class TokenizedDefinition:
    compiled: CompiledPipeline  # with sentinels, compiled for `region`
    text: str  # compact JSON with sentinels
    region: str

    def values(self, bucket_name: str, role_arn: str, mlflow_arn: str | None) -> dict[str, str]:
        out = {BUCKET_SENTINEL: bucket_name, role_sentinel(self.region): role_arn}
        if mlflow_arn:
            out[mlflow_sentinel(self.region)] = mlflow_arn
        return out

    def render(self, values: dict[str, str]) -> str:
        """The definition as a CloudFormation-resolvable string (tokens join in)."""
        return render_joined(self.text, values)


def render_joined(text: str, values: dict[str, str]) -> str:
    pieces: list[str] = [text]
    for sentinel, value in values.items():
        pieces = [p for chunk in pieces for p in _split_keep(chunk, sentinel, value)]
    return Fn.join("", pieces) if len(pieces) > 1 else pieces[0]


def marker_values(values: dict[str, str]) -> dict[str, str]:
    """marker -> value (a token), one marker per distinct sentinel."""
    return {MARKER.format(i): value for i, value in enumerate(values.values())}


def render_markers(text: str, values: dict[str, str]) -> tuple[str, dict[str, str]]:
    """`text` with each sentinel replaced by a BucketDeployment marker, and the markers it
    uses with their values (tokens): one marker per distinct value, however often it occurs."""
    markers: dict[str, str] = {}
    for (sentinel, value), marker in zip(values.items(), marker_values(values), strict=True):
        if sentinel in text:
            text = text.replace(sentinel, marker)
            markers[marker] = value
    return text, markers


def _split_keep(text: str, sentinel: str, value: str) -> list[str]:
    if not isinstance(text, str) or Token.is_unresolved(text) or sentinel not in text:
        return [text]
    out: list[str] = []
    for i, chunk in enumerate(text.split(sentinel)):
        if i:
            out.append(value)
        if chunk:
            out.append(chunk)
    return out


def tokenized_definition(spec: BakeoffSpec, with_mlflow_server: bool, region: str) -> TokenizedDefinition:
    """Compile `spec` for `region` with sentinels (see the module docstring)."""
    if with_mlflow_server:
        spec = spec.model_copy(update={"mlflow": spec.mlflow.model_copy(update={
            "tracking_uri": mlflow_sentinel(region), "enabled": True})})
    compiled = compile_pipeline(spec, bucket=BUCKET_SENTINEL, role_arn=role_sentinel(region), region=region)
    check_definition(compiled.definition)
    foreign = sorted({uri for uri in image_uris(compiled.definition) if image_region(uri) not in (None, region)})
    if foreign:  # the compiler validates this too; the pipeline must never name another region's images
        raise SpecError(f"the pipeline would pull {foreign[0]} in a stack in {region}; SageMaker pulls images only "
                        "from its own region", field="image")
    text = json.dumps(compiled.definition, sort_keys=True, separators=(",", ":"))
    return TokenizedDefinition(compiled, text, region)



def deployed_size_bound(text: str, values: dict[str, int]) -> int:
    """An upper bound of the definition's length once the sentinels are replaced by values
    at most `values[sentinel]` characters long."""
    size = len(text)
    for sentinel, longest in values.items():
        size += text.count(sentinel) * max(0, longest - len(sentinel))
    return size


def content_key(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()
