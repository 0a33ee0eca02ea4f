"""What the execution role and the people who start a bake-off may do, derived from the
compiled definition (not from the spec): a permission is granted only when the pipeline
the stack deploys uses it. The statements are pipelines/sagemaker/cdk/grants.py's, the ones
`bakeoff synth --cdk-out` writes for the jsii construct (cdk/construct), with this stack's
tokens for their placeholders: both constructs grant the same.

Each `Grant` is a group of statements with the reason its wildcards are accepted (None:
it has none). The construct puts every group that has a reason into a policy of its own
and acknowledges cdk-nag's findings on that policy only, so an acknowledgment names the
exact statement it covers and a later wildcard elsewhere on the role is still a finding.

Sources (see /work/notes/aws_facts.md section 11):
- VPC: AWS docs "How to use SageMaker AI execution roles" (sagemaker-roles), CreateTrainingJob
  and CreateProcessingJob with VpcConfig: ec2:CreateNetworkInterface,
  CreateNetworkInterfacePermission, DeleteNetworkInterface, DeleteNetworkInterfacePermission,
  DescribeNetworkInterfaces, DescribeVpcs, DescribeDhcpOptions, DescribeSubnets,
  DescribeSecurityGroups; for processing "Don't scope in the policy with any conditions or
  resource filters".
- KMS: OutputDataConfig.KmsKeyId "the SageMaker execution role must include permissions to call
  kms:Encrypt" (botocore sagemaker model); S3 SSE-KMS writes need kms:GenerateDataKey and reads
  kms:Decrypt; VolumeKmsKeyId needs kms:CreateGrant (sagemaker-roles).
- S3: without s3:ListBucket a GET or HEAD of a missing key is 403, not 404 (botocore S3 model,
  GetObject and HeadObject). s3:GetBucketLocation takes no s3:prefix condition key.
- Logs: training jobs log to /aws/sagemaker/TrainingJobs and processing jobs to
  /aws/sagemaker/ProcessingJobs; logs:CreateLogGroup is authorized on the log group's ARN
  itself (no `:*`), streams on `...:log-stream:*`.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from aws_cdk import Aws, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3

from bakeoff.pipelines.sagemaker.cdk import grants as pure
from bakeoff.pipelines.sagemaker.cdk.reads import (  # noqa: F401 - the construct's public names, kept here
    LOG_GROUPS,
    MLFLOW_ACTIONS,
    MLFLOW_APP_ACTIONS,
    MLFLOW_CLIENT_ACTIONS,
    MLFLOW_SCRIPT_ACTIONS,
    REPORT_JOB_ACTIONS,
    START_ACTIONS,
    VPC_ACTIONS,
    data_uris,
    image_repositories,
    kms_keys,
    lists_its_own_steps,
    mlflow_actions,
    uses_vpc,
)

input_keys = pure.input_keys
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z:]+)\}")


@dataclass
class Grant:
    """Statements that belong together, and the REASONS key that accepts their wildcards."""

    name: str
    statements: list[iam.PolicyStatement]
    reason: str | None = None
    wildcards: list[str] = field(default_factory=list)  # resources (as written) that cdk-nag will name


def _values(stack: Stack, bucket: s3.IBucket | None, role_arn: str, pipeline_arn: str) -> dict[str, str]:
    """What each placeholder stands for in this stack (CDK tokens where the value is deploy-time)."""
    return {"AWS::Partition": stack.partition, "AWS::AccountId": stack.account,
            "BucketArn": bucket.bucket_arn if bucket else "", "RoleArn": role_arn, "PipelineArn": pipeline_arn}


def _fill(text: str, values: dict[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: values[m[1]], text)


def _grant(g: dict[str, Any], values: dict[str, str]) -> Grant:
    statements = [iam.PolicyStatement.from_json(json.loads(_fill(json.dumps(s), values))) for s in g["statements"]]
    return Grant(g["name"], statements, g["reason"], [_fill(w, values) for w in g["wildcards"]])


def s3_read(name: str, uris: list[str], reason: str = "data-prefixes") -> Grant | None:
    """Read access to S3 prefixes the pipeline's data channels may point at."""
    g = pure.s3_read(name, uris, reason)
    return _grant(g, {"AWS::Partition": Aws.PARTITION}) if g else None


def check_data_uri(uri: str, where: str) -> str:
    from bakeoff.pipelines.errors import SpecError
    from bakeoff.pipelines.spec.model import S3_URI_RE

    if not isinstance(uri, str) or not S3_URI_RE.match(uri):
        raise SpecError(f"{uri!r} is not an s3://bucket/prefix URI", field=where)
    return uri


def execution_grants(stack: Stack, bucket: s3.IBucket, prefix: str, definition: dict, role_arn: str, *,
                     pipeline_arn: str, region: str, mlflow_arns: list[str]) -> list[Grant]:
    """Least privilege for the pipeline and its jobs (grants.py execution_grants)."""
    values = _values(stack, bucket, role_arn, pipeline_arn)
    return [_grant(g, values) for g in pure.execution_grants(definition, prefix, region, mlflow_arns)]


def start_grants(stack: Stack, bucket: s3.IBucket, evaluation_prefix: str, pipeline_arn: str, definition: dict,
                 region: str) -> list[Grant]:
    """Starting, watching and reporting executions of the one pipeline (grants.py start_grants)."""
    values = _values(stack, bucket, "", pipeline_arn)
    return [_grant(g, values) for g in pure.start_grants(definition, evaluation_prefix, region)]
