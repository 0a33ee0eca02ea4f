"""The execution role's and the starters' IAM statements as JSON with `${Name}` placeholders (placeholders.py),
for the construct (cdk/construct; cdk/bakeoff_cdk is it for Python apps): a permission is granted only when the
compiled definition uses it, derived from the definition, not the spec.

A grant is `{"name", "statements", "reason", "wildcards"}`: `reason` (a key of reasons.REASONS, or None when
it has no wildcard) accepts cdk-nag's IAM5 findings on the resources in `wildcards`, on the grant's own policy.

Sources (and /work/notes/aws_facts.md section 11):
- VPC: AWS docs "How to use SageMaker AI execution roles" (sagemaker-roles), CreateTrainingJob and
  CreateProcessingJob with VpcConfig: ec2:CreateNetworkInterface, CreateNetworkInterfacePermission,
  DeleteNetworkInterface, DeleteNetworkInterfacePermission, DescribeNetworkInterfaces, DescribeVpcs,
  DescribeDhcpOptions, DescribeSubnets, DescribeSecurityGroups; for processing "Don't scope in the policy with
  any conditions or resource filters".
- KMS: OutputDataConfig.KmsKeyId "the SageMaker execution role must include permissions to call kms:Encrypt"
  (botocore sagemaker model); S3 SSE-KMS writes need kms:GenerateDataKey and reads kms:Decrypt; VolumeKmsKeyId
  needs kms:CreateGrant (sagemaker-roles).
- S3: without s3:ListBucket a GET or HEAD of a missing key is 403, not 404 (botocore S3 model, GetObject and
  HeadObject). s3:GetBucketLocation takes no s3:prefix condition key.
- Logs: training jobs log to /aws/sagemaker/TrainingJobs and processing jobs to /aws/sagemaker/ProcessingJobs;
  logs:CreateLogGroup is authorized on the log group's ARN itself (no `:*`), streams on `...:log-stream:*`."""
from __future__ import annotations

import hashlib
import re
from typing import Any

from bakeoff.pipelines.errors import SpecError

from .placeholders import BUCKET_ARN, BUCKET_SENTINEL, PARTITION, PIPELINE_ARN, ROLE_ARN, arn, objects
from .reads import (
    _KMS_ARN,
    LOG_GROUPS,
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

Json = dict[str, Any]


def statement(sid: str, actions: list[str], resources: list[str], conditions: Json | None = None,
              effect: str = "Allow") -> Json:
    out: Json = {"Sid": sid, "Effect": effect, "Action": actions, "Resource": resources}
    if conditions:
        out["Condition"] = conditions
    return out


def grant(name: str, statements: list[Json], reason: str | None = None, wildcards: list[str] | None = None) -> Json:
    return {"name": name, "statements": statements, "reason": reason, "wildcards": wildcards or []}


def input_keys(prefix: str) -> list[str]:
    """The keys of the deployed inputs (code/<sha256>/, data/<sha>/<channel>/, <name>/eval-config/<sha256>/)."""
    return [f"{prefix}/code/*", f"{prefix}/data/*", f"{prefix}/*/eval-config/*"]


def s3_read(name: str, uris: list[str], reason: str = "data-prefixes") -> Json | None:
    """Read access to the S3 prefixes the data channels may point at (SageMaker lists an S3Prefix channel
    with its prefix)."""
    if not uris:
        return None
    statements, wildcards = [], []
    for uri in sorted(set(uris)):
        bucket, _, key_prefix = uri[len("s3://"):].partition("/")
        sid = hashlib.sha256(uri.encode()).hexdigest()[:8]
        objs = f"arn:{PARTITION}:s3:::{bucket}/{key_prefix}*"
        statements.append(statement(f"ReadObjects{sid}", ["s3:GetObject"], [objs]))
        wildcards.append(objs)
        condition = {"StringLike": {"s3:prefix": [f"{key_prefix}*"]}} if key_prefix else None
        statements.append(statement(f"ListPrefix{sid}", ["s3:ListBucket"], [f"arn:{PARTITION}:s3:::{bucket}"],
                                    condition))
    return grant(name, statements, reason, wildcards)


def kms_resource(key: str, region: str) -> tuple[str, Json | None]:
    """KMS authorizes on key ARNs, never on an alias ARN: an alias is granted on this account's keys in the
    region that carry it (kms:ResourceAliases)."""
    m = _KMS_ARN.match(key)
    if m:
        if m["region"] != region:
            raise SpecError(f"KMS key {key} is in {m['region']} but the stack deploys to {region}; SageMaker uses "
                            "keys of its own region", field="security")
        if m["kind"] == "key":
            return key, None
        return (f"arn:{m['partition']}:kms:{region}:{m['account']}:key/*",
                {"ForAnyValue:StringEquals": {"kms:ResourceAliases": f"alias/{m['name']}"}})
    if key.startswith("alias/"):
        return arn("kms", region, "key/*"), {"ForAnyValue:StringEquals": {"kms:ResourceAliases": key}}
    return arn("kms", region, f"key/{key}"), None


def kms_grant(sid: str, keys: list[str], actions: list[str], region: str) -> Json:
    statements, wildcards, plain = [], [], []
    for key in keys:
        resource, condition = kms_resource(key, region)
        if condition:
            digest = hashlib.sha256(key.encode()).hexdigest()[:8]
            statements.append(statement(f"{sid}Alias{digest}", actions, [resource], condition))
            wildcards.append(resource)
        else:
            plain.append(resource)
    if plain:
        statements.insert(0, statement(sid, actions, plain))
    return grant(sid, statements, "kms-alias" if wildcards else None, wildcards)


def job_arn(region: str, kind: str) -> str:
    return arn("sagemaker", region, f"{kind}/pipelines-*")


def _log_group(region: str, name: str) -> str:
    return arn("logs", region, f"log-group:{name}")


def execution_grants(definition: Json, prefix: str, region: str, mlflow_arns: list[str]) -> list[Json]:
    """Least privilege for the pipeline and its jobs (the sources above)."""
    from bakeoff.pipelines.steps import iam_actions, job_resources

    jobs = [job_arn(region, resource) for resource in job_resources()]
    streams = [_log_group(region, f"{name}:log-stream:*") for name in LOG_GROUPS]
    groups_any = [_log_group(region, f"{name}:*") for name in LOG_GROUPS]
    grants = [
        grant("PipelineJobs", [statement("PipelineJobs", [*iam_actions(), "sagemaker:AddTags"], jobs)], "job-names",
              list(jobs)),
        grant("PassItselfToJobs", [statement("PassItselfToJobs", ["iam:PassRole"], [ROLE_ARN],
                                             {"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}})]),
        # The deployed inputs are never written by a job: an explicit deny wins over any allow.
        grant("ArtifactsObjects", [
            statement("ArtifactsObjects", ["s3:GetObject", "s3:PutObject", "s3:DeleteObject",
                                           "s3:AbortMultipartUpload"], [objects(f"{prefix}/*")]),
            statement("InputsReadOnly", ["s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"],
                      [objects(k) for k in input_keys(prefix)], effect="Deny")],
              "prefix-objects", [objects(f"{prefix}/*")]),
        grant("ArtifactsList", [statement("ArtifactsList", ["s3:ListBucket", "s3:GetBucketLocation"], [BUCKET_ARN])]),
        grant("Unscopable", [
            statement("EcrLogin", ["ecr:GetAuthorizationToken"], ["*"]),
            statement("JobMetrics", ["cloudwatch:PutMetricData"], ["*"],
                      {"StringLike": {"cloudwatch:namespace": "/aws/sagemaker/*"}})], "unscopable", ["*"]),
        grant("JobLogGroups", [statement("JobLogGroups", ["logs:CreateLogGroup"],
                                         [_log_group(region, name) for name in LOG_GROUPS])]),
        grant("JobLogStreams", [
            statement("JobLogStreams", ["logs:CreateLogStream", "logs:PutLogEvents"], streams),
            statement("JobLogStreamsRead", ["logs:DescribeLogStreams"], groups_any)],
              "log-streams", streams + groups_any),
    ]
    repositories = [arn("ecr", repo_region, f"repository/{repo}", account=acct)
                    for acct, repo_region, repo in image_repositories(definition)]
    if repositories:
        grants.insert(4, grant("PullTrainingImages", [statement(
            "PullTrainingImages", ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer",
                                   "ecr:BatchCheckLayerAvailability"], repositories)]))
    if lists_its_own_steps(definition):
        execs = f"{PIPELINE_ARN}/execution/*"
        grants.append(grant("ListOwnSteps", [statement("ListOwnSteps", ["sagemaker:ListPipelineExecutionSteps"],
                                                       [PIPELINE_ARN, execs])], "executions", [execs]))
    read = s3_read("ReadData", [u for u in data_uris(definition).values() if BUCKET_SENTINEL not in u])
    if read:
        grants.append(read)
    if uses_vpc(definition):
        grants.append(grant("VpcNetworkInterfaces", [statement("VpcNetworkInterfaces", list(VPC_ACTIONS), ["*"])],
                            "vpc-interfaces", ["*"]))
    output_keys, volume_keys = kms_keys(definition)
    for sid, keys, actions in (("OutputKms", output_keys, ["kms:Encrypt", "kms:GenerateDataKey", "kms:Decrypt"]),
                               ("VolumeKms", volume_keys, ["kms:CreateGrant"])):
        if keys:
            grants.append(kms_grant(sid, keys, actions, region))
    for mlflow in mlflow_arns:
        sid = "MlflowTracking" + (hashlib.sha256(mlflow.encode()).hexdigest()[:8] if len(mlflow_arns) > 1 else "")
        grants.append(grant(sid, [statement(sid, mlflow_actions(mlflow), [mlflow])]))
    return grants


def spec_mlflow_arns(tracking_uri: str | None, enabled: bool) -> list[str]:
    """The spec's own SageMaker tracking server or App, which the jobs call."""
    uri = tracking_uri or ""
    return [uri] if enabled and re.match(r"^arn:aws[a-z\-]*:sagemaker:", uri) else []


def start_grants(definition: Json, evaluation_prefix: str, region: str) -> list[Json]:
    """Start, watch, stop and report executions of the one pipeline (`bakeoff start/status/wait/report`)."""
    execs = f"{PIPELINE_ARN}/execution/*"
    evaluations = objects(f"{evaluation_prefix}/*")
    reports = [job_arn(region, "training-job"), job_arn(region, "processing-job")]
    grants = [
        grant("StartWatch", [statement("StartWatch", list(START_ACTIONS), [PIPELINE_ARN, execs])], "executions",
              [execs]),
        grant("ReportJobs", [statement("ReportJobs", list(REPORT_JOB_ACTIONS), reports)], "job-names", reports),
        grant("ReadEvaluations", [statement("ReadEvaluations", ["s3:GetObject"], [evaluations])], "evaluations",
              [evaluations]),
    ]
    output_keys, _ = kms_keys(definition)
    if output_keys:  # evaluation.json is written with the output key
        grants.append(kms_grant("ReadEvaluationsKms", output_keys, ["kms:Decrypt"], region))
    return grants
