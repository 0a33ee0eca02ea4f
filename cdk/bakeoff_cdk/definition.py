"""bakeoff's own compiler, with CDK tokens where the bucket, role and MLflow server go.

The compiler is pure and knows nothing of CDK: it compiles with sentinel values
that are valid in every check, and the sentinels are then replaced by tokens. So
`cdk synth` and `bakeoff synth` cannot disagree: after token substitution the
template's definition is `bakeoff synth --bucket B --role R` byte for byte.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from aws_cdk import Fn

from pipelines.sagemaker.compiler import CompiledPipeline, compile_pipeline
from pipelines.sagemaker.validate import check_definition
from pipelines.spec import BakeoffSpec

BUCKET_SENTINEL = "bakeoff-cdk-bucket-sentinel-7f3a"
ROLE_SENTINEL = "arn:aws:iam::000000000000:role/bakeoff-cdk-role-sentinel-7f3a"
MLFLOW_SENTINEL = "arn:aws:sagemaker:us-east-1:000000000000:mlflow-tracking-server/bakeoff-cdk-sentinel-7f3a"


@dataclass(frozen=True)
class TokenizedDefinition:
    compiled: CompiledPipeline  # with sentinels
    text: str  # compact JSON with sentinels

    def render(self, bucket_name: str, role_arn: str, mlflow_arn: str | None = None) -> str:
        """The definition as a CloudFormation-resolvable string (tokens join in)."""
        parts = {BUCKET_SENTINEL: bucket_name, ROLE_SENTINEL: role_arn}
        if mlflow_arn:
            parts[MLFLOW_SENTINEL] = mlflow_arn
        pieces: list[str] = [self.text]
        for sentinel, value in parts.items():
            pieces = [p for chunk in pieces for p in _split_keep(chunk, sentinel, value)]
        return Fn.join("", pieces) if len(pieces) > 1 else pieces[0]


def _split_keep(text: str, sentinel: str, value: str) -> list[str]:
    if not isinstance(text, str) or sentinel not in text:
        return [text]
    out: list[str] = []
    for i, chunk in enumerate(text.split(sentinel)):
        if i:
            out.append(value)
        if chunk:
            out.append(chunk)
    return out


def tokenized_definition(spec: BakeoffSpec, with_mlflow_server: bool) -> TokenizedDefinition:
    if with_mlflow_server:
        spec = spec.model_copy(update={"mlflow": spec.mlflow.model_copy(update={"tracking_uri": MLFLOW_SENTINEL,
                                                                               "enabled": True})})
    compiled = compile_pipeline(spec, bucket=BUCKET_SENTINEL, role_arn=ROLE_SENTINEL)
    check_definition(compiled.definition)
    return TokenizedDefinition(compiled, json.dumps(compiled.definition, sort_keys=True, separators=(",", ":")))
