"""What the execution role and the people who start a bake-off may do, derived from the
compiled definition (not from the spec): a permission is granted only when the pipeline
the stack deploys uses it.

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

import hashlib
from dataclasses import dataclass, field

from aws_cdk import ArnFormat, Aws, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3

from pipelines.errors import SpecError
from pipelines.sagemaker.cdk.placeholders import BUCKET_SENTINEL
from pipelines.sagemaker.cdk.reads import (  # noqa: F401 - the construct's public names, kept here
    _KMS_ARN,
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


@dataclass
class Grant:
    """Statements that belong together, and the REASONS key that accepts their wildcards."""

    name: str
    statements: list[iam.PolicyStatement]
    reason: str | None = None
    wildcards: list[str] = field(default_factory=list)  # resources (as written) that cdk-nag will name



def job_arn(stack: Stack, kind: str) -> str:
    return stack.format_arn(service="sagemaker", resource=kind, resource_name="pipelines-*")


def _log_group(stack: Stack, name: str) -> str:
    return stack.format_arn(service="logs", resource="log-group", resource_name=name,
                            arn_format=ArnFormat.COLON_RESOURCE_NAME)



def kms_resource(stack: Stack, key: str, region: str) -> tuple[str, dict | None]:
    """The IAM resource of a KMS key as SageMaker takes it (key id, key ARN, alias name or
    alias ARN), and the condition an alias needs: KMS authorizes on the key's ARN, never on
    an alias ARN, so an alias is granted on this account's keys in the region that carry it
    (kms:ResourceAliases)."""
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
        return (stack.format_arn(service="kms", resource="key", resource_name="*", region=region),
                {"ForAnyValue:StringEquals": {"kms:ResourceAliases": key}})
    return stack.format_arn(service="kms", resource="key", resource_name=key, region=region), None


def s3_read(name: str, uris: list[str], reason: str = "data-prefixes") -> Grant | None:
    """Read access to S3 prefixes the pipeline's data channels may point at."""
    if not uris:
        return None
    statements, wildcards = [], []
    for uri in sorted(set(uris)):
        bucket, _, key_prefix = uri[len("s3://"):].partition("/")
        sid = hashlib.sha256(uri.encode()).hexdigest()[:8]
        objects = f"arn:{Aws.PARTITION}:s3:::{bucket}/{key_prefix}*"
        statements.append(iam.PolicyStatement(sid=f"ReadObjects{sid}", actions=["s3:GetObject"], resources=[objects]))
        wildcards.append(objects)
        listing = iam.PolicyStatement(sid=f"ListPrefix{sid}", actions=["s3:ListBucket"],
                                      resources=[f"arn:{Aws.PARTITION}:s3:::{bucket}"])
        if key_prefix:  # SageMaker lists an S3Prefix channel with its prefix
            listing.add_condition("StringLike", {"s3:prefix": [f"{key_prefix}*"]})
        statements.append(listing)
    return Grant(name, statements, reason, wildcards)


def check_data_uri(uri: str, where: str) -> str:
    from pipelines.spec.model import S3_URI_RE

    if not isinstance(uri, str) or not S3_URI_RE.match(uri):
        raise SpecError(f"{uri!r} is not an s3://bucket/prefix URI", field=where)
    return uri


# --- the execution role -------------------------------------------------------------------
def input_keys(prefix: str) -> list[str]:
    """The keys of the assets `deploy` uploads (pipelines/sagemaker/compiler.py: code/<sha256>/,
    data/<sha>/<channel>/; pipelines/steps/evaluate.py: <name>/eval-config/<sha256>/config.json)."""
    return [f"{prefix}/code/*", f"{prefix}/data/*", f"{prefix}/*/eval-config/*"]



def execution_grants(stack: Stack, bucket: s3.IBucket, prefix: str, definition: dict, role_arn: str, *,
                     pipeline_arn: str, region: str, mlflow_arns: list[str], extra_data_uris: list[str]) -> list[Grant]:
    """Least privilege for the pipeline and its jobs: their own jobs, this bucket, pulls of
    exactly the images the definition names, their logs and metrics, and (only when the
    definition uses them) VPC network interfaces, KMS keys, other data prefixes, MLflow."""
    from pipelines.steps import iam_actions, job_resources

    # What the step kinds declare they start (pipelines/steps), and tags on what they start.
    jobs = [job_arn(stack, resource) for resource in job_resources()]
    grants = [
        Grant("PipelineJobs", [iam.PolicyStatement(
            sid="PipelineJobs", actions=[*iam_actions(), "sagemaker:AddTags"], resources=jobs)], "job-names",
            list(jobs)),
        Grant("PassItselfToJobs", [iam.PolicyStatement(
            sid="PassItselfToJobs", actions=["iam:PassRole"], resources=[role_arn],
            conditions={"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}})]),
        Grant("ArtifactsObjects", [iam.PolicyStatement(
            sid="ArtifactsObjects",
            actions=["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"],
            resources=[bucket.arn_for_objects(f"{prefix}/*")]),
            # What a verdict is decided from and by is uploaded at deploy time by the deployer, never written
            # by a job: a training job (the script runs with this role) that could rewrite the Evaluate step's
            # config, the code or the data would move the verdict of every job after it. An explicit deny wins
            # over any allow in the role's policies (IAM policy evaluation logic).
            iam.PolicyStatement(
                sid="InputsReadOnly", effect=iam.Effect.DENY,
                actions=["s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"],
                resources=[bucket.arn_for_objects(key) for key in input_keys(prefix)])], "prefix-objects",
            [bucket.arn_for_objects(f"{prefix}/*")]),
        # No s3:prefix condition: GetBucketLocation never carries one, and a prefix-conditioned
        # ListBucket does not count for GetObject/HeadObject, whose missing keys then answer 403
        # instead of 404 (the Neuron compile cache's S3 client's handling of 403 is not documented).
        Grant("ArtifactsList", [iam.PolicyStatement(
            sid="ArtifactsList", actions=["s3:ListBucket", "s3:GetBucketLocation"], resources=[bucket.bucket_arn])]),
        Grant("Unscopable", [
            iam.PolicyStatement(sid="EcrLogin", actions=["ecr:GetAuthorizationToken"], resources=["*"]),
            iam.PolicyStatement(sid="JobMetrics", actions=["cloudwatch:PutMetricData"], resources=["*"],
                                conditions={"StringLike": {"cloudwatch:namespace": "/aws/sagemaker/*"}})],
            "unscopable", ["*"]),
        # In a fresh account the first job creates its log group: CreateLogGroup is authorized
        # on the group's own ARN, which `group:*` does not match.
        Grant("JobLogGroups", [iam.PolicyStatement(
            sid="JobLogGroups", actions=["logs:CreateLogGroup"],
            resources=[_log_group(stack, name) for name in LOG_GROUPS])]),
        Grant("JobLogStreams", [
            iam.PolicyStatement(sid="JobLogStreams", actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                                resources=[_log_group(stack, f"{name}:log-stream:*") for name in LOG_GROUPS]),
            iam.PolicyStatement(sid="JobLogStreamsRead", actions=["logs:DescribeLogStreams"],
                                resources=[_log_group(stack, f"{name}:*") for name in LOG_GROUPS])],
            "log-streams",
            [_log_group(stack, f"{name}:log-stream:*") for name in LOG_GROUPS] +
            [_log_group(stack, f"{name}:*") for name in LOG_GROUPS]),
    ]
    repositories = [stack.format_arn(service="ecr", account=acct, region=repo_region, resource="repository",
                                     resource_name=repo) for acct, repo_region, repo in image_repositories(definition)]
    if repositories:  # exactly the repositories of the images the definition names, in its region
        grants.insert(4, Grant("PullTrainingImages", [iam.PolicyStatement(
            sid="PullTrainingImages",
            actions=["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer", "ecr:BatchCheckLayerAvailability"],
            resources=repositories)]))
    if lists_its_own_steps(definition):
        execs = f"{pipeline_arn}/execution/*"
        grants.append(Grant("ListOwnSteps", [iam.PolicyStatement(
            sid="ListOwnSteps", actions=["sagemaker:ListPipelineExecutionSteps"], resources=[pipeline_arn, execs])],
            "executions", [execs]))
    external = [uri for uri in data_uris(definition).values() if BUCKET_SENTINEL not in uri]
    read = s3_read("ReadData", external + list(extra_data_uris))
    if read:
        grants.append(read)
    if uses_vpc(definition):
        grants.append(Grant("VpcNetworkInterfaces", [iam.PolicyStatement(
            sid="VpcNetworkInterfaces", actions=list(VPC_ACTIONS), resources=["*"])], "vpc-interfaces", ["*"]))
    output_keys, volume_keys = kms_keys(definition)
    for sid, keys, actions in (("OutputKms", output_keys, ["kms:Encrypt", "kms:GenerateDataKey", "kms:Decrypt"]),
                               ("VolumeKms", volume_keys, ["kms:CreateGrant"])):
        if keys:
            grants.append(kms_grant(stack, sid, keys, actions, region))
    for arn in mlflow_arns:
        sid = "MlflowTracking"
        if len(mlflow_arns) > 1:
            sid += hashlib.sha256(arn.encode()).hexdigest()[:8]
        grants.append(Grant(sid, [iam.PolicyStatement(sid=sid, actions=mlflow_actions(arn), resources=[arn])]))
    return grants


def kms_grant(stack: Stack, sid: str, keys: list[str], actions: list[str], region: str) -> Grant:
    statements, wildcards = [], []
    plain = []
    for key in keys:
        resource, condition = kms_resource(stack, key, region)
        if condition:
            digest = hashlib.sha256(key.encode()).hexdigest()[:8]
            statements.append(iam.PolicyStatement(sid=f"{sid}Alias{digest}", actions=actions, resources=[resource],
                                                  conditions=condition))
            wildcards.append(resource)
        else:
            plain.append(resource)
    if plain:
        statements.insert(0, iam.PolicyStatement(sid=sid, actions=actions, resources=plain))
    return Grant(sid, statements, "kms-alias" if wildcards else None, wildcards)


# --- people who start and watch the pipeline ----------------------------------------------
def start_grants(stack: Stack, bucket: s3.IBucket, evaluation_prefix: str, pipeline_arn: str, definition: dict,
                 region: str) -> list[Grant]:
    execs = f"{pipeline_arn}/execution/*"
    evaluations = bucket.arn_for_objects(f"{evaluation_prefix}/*")
    grants = [
        Grant("StartWatch", [iam.PolicyStatement(sid="StartWatch", actions=list(START_ACTIONS),
                                                 resources=[pipeline_arn, execs])], "executions", [execs]),
        # `bakeoff report` reads each training job's BillableTimeInSeconds and the Evaluate
        # step's output location.
        Grant("ReportJobs", [iam.PolicyStatement(sid="ReportJobs", actions=list(REPORT_JOB_ACTIONS),
                                                 resources=[job_arn(stack, "training-job"),
                                                            job_arn(stack, "processing-job")])], "job-names",
              [job_arn(stack, "training-job"), job_arn(stack, "processing-job")]),
        Grant("ReadEvaluations", [iam.PolicyStatement(sid="ReadEvaluations", actions=["s3:GetObject"],
                                                      resources=[evaluations])], "evaluations", [evaluations]),
    ]
    output_keys, _ = kms_keys(definition)
    if output_keys:  # evaluation.json is written with the output key
        grants.append(kms_grant(stack, "ReadEvaluationsKms", output_keys, ["kms:Decrypt"], region))
    return grants
