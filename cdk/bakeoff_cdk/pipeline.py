"""The `BakeoffPipeline` construct: bucket, least-privilege role, code and data
assets, the SageMaker pipeline from bakeoff's own compiler, and the optional
MLflow tracking server and schedule."""
from __future__ import annotations

import hashlib
import re
import tempfile
from pathlib import Path

from aws_cdk import ArnFormat, Aws, CfnOutput, DefaultStackSynthesizer, Duration, RemovalPolicy, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3deploy
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from pipelines.loader import load_spec
from pipelines.spec import BakeoffSpec

from .definition import tokenized_definition
from .security import Acknowledger, nag_id, nag_text

# Inline definitions count against the template; larger ones go through S3.
INLINE_DEFINITION_LIMIT = 40_000
_ECR_IMAGE = re.compile(r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(\.cn)?/"
                        r"(?P<repo>[^:@]+)")


def _image_repositories(definition: dict) -> list[tuple[str, str, str]]:
    images = set()
    for step in definition["Steps"]:
        args = step.get("Arguments", {})
        image = args.get("AlgorithmSpecification", {}).get("TrainingImage") or \
            args.get("AppSpecification", {}).get("ImageUri")
        if image:
            images.add(image)
    repos = set()
    for image in images:
        m = _ECR_IMAGE.match(image)
        if m:
            repos.add((m["account"], m["region"], m["repo"]))
    return sorted(repos)


class BakeoffPipeline(Construct):
    """A bake-off as a SageMaker pipeline, compiled by bakeoff from `spec`.

    Creates (or takes) the artifacts bucket and the SageMaker execution role,
    uploads the content-addressed code/data/config assets, and defines the
    `AWS::SageMaker::Pipeline`. Optional: a managed MLflow tracking server wired
    into the jobs' tracking URI, and an EventBridge schedule that starts it.
    """

    def __init__(self, scope: Construct, construct_id: str, *, spec: BakeoffSpec | str | Path,
                 bucket: s3.IBucket | None = None, role: iam.IRole | None = None,
                 compile_cache_expiry_days: int = 30, mlflow_tracking_server: bool = False,
                 mlflow_server_size: str = "Small", schedule: events.Schedule | None = None,
                 schedule_parameters: dict[str, str] | None = None,
                 inline_definition_limit: int = INLINE_DEFINITION_LIMIT,
                 removal_policy: RemovalPolicy = RemovalPolicy.RETAIN) -> None:
        super().__init__(scope, construct_id)
        # Access-log delivery through a bucket policy, not the legacy ACL.
        self.node.set_context("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy", True)
        self.acknowledge = Acknowledger()
        if not isinstance(spec, BakeoffSpec):
            spec = load_spec(spec)  # a bad spec stops synth with the CLI's one-line error
        self.spec = spec
        stack = Stack.of(self)
        prefix = spec.storage.prefix
        self.pipeline_name = f"bakeoff-{spec.name}"
        tokenized = tokenized_definition(spec, with_mlflow_server=mlflow_tracking_server)
        self.compiled = tokenized.compiled

        # --- storage ----------------------------------------------------------------
        self.access_logs_bucket = None
        if bucket is None:
            self.access_logs_bucket = s3.Bucket(
                self, "AccessLogs", encryption=s3.BucketEncryption.S3_MANAGED,
                block_public_access=s3.BlockPublicAccess.BLOCK_ALL, enforce_ssl=True,
                object_ownership=s3.ObjectOwnership.BUCKET_OWNER_PREFERRED, versioned=True,
                removal_policy=removal_policy,
                lifecycle_rules=[s3.LifecycleRule(id="expire-access-logs", expiration=Duration.days(365))])
            bucket = s3.Bucket(
                self, "Artifacts", encryption=s3.BucketEncryption.S3_MANAGED,
                block_public_access=s3.BlockPublicAccess.BLOCK_ALL, enforce_ssl=True, versioned=True,
                server_access_logs_bucket=self.access_logs_bucket, server_access_logs_prefix="artifacts/",
                removal_policy=removal_policy,
                lifecycle_rules=[
                    s3.LifecycleRule(id="expire-compile-caches", prefix=f"{prefix}/compile-cache/",
                                     expiration=Duration.days(compile_cache_expiry_days),
                                     noncurrent_version_expiration=Duration.days(1)),
                    s3.LifecycleRule(id="expire-noncurrent-versions",
                                     noncurrent_version_expiration=Duration.days(30),
                                     abort_incomplete_multipart_upload_after=Duration.days(7)),
                ])
        self.bucket = bucket

        # --- MLflow -----------------------------------------------------------------
        self.mlflow_server = None
        mlflow_arn = None
        if mlflow_tracking_server:
            mlflow_role = iam.Role(self, "MlflowRole", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
                                   description=f"MLflow tracking server of bake-off {spec.name}")
            artifacts = bucket.arn_for_objects(f"{prefix}/mlflow/*")
            mlflow_role.add_to_policy(iam.PolicyStatement(
                actions=["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"],
                resources=[artifacts]))
            mlflow_role.add_to_policy(iam.PolicyStatement(
                actions=["s3:ListBucket", "s3:GetBucketLocation"], resources=[bucket.bucket_arn]))
            self.acknowledge(mlflow_role, nag_id("AwsSolutions-IAM5", f"Resource::{nag_text(stack, artifacts)}"),
                             "mlflow-artifacts")
            server_name = f"bakeoff-{spec.name}"[:256]
            self.mlflow_server = sagemaker.CfnMlflowTrackingServer(
                self, "MlflowServer", tracking_server_name=server_name,
                artifact_store_uri=f"s3://{bucket.bucket_name}/{prefix}/mlflow",
                role_arn=mlflow_role.role_arn, tracking_server_size=mlflow_server_size,
                automatic_model_registration=False)
            mlflow_arn = self.mlflow_server.attr_tracking_server_arn

        # --- execution role ---------------------------------------------------------
        if role is None:
            role = iam.Role(self, "ExecutionRole", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
                            description=f"SageMaker execution role of bake-off {spec.name}")
            for statement, reason in self.execution_policy(stack, bucket, prefix, tokenized.compiled.definition,
                                                           role.role_arn, mlflow_arn):
                role.add_to_policy(statement)
                if reason:
                    for resource in statement.resources:
                        evidence = nag_text(stack, resource)
                        if "*" in evidence:
                            finding = nag_id("AwsSolutions-IAM5", f"Resource::{evidence}")
                            if finding not in {r[1] for r in self.acknowledge.records}:
                                self.acknowledge(role, finding, reason)
        self.role = role

        # --- assets -----------------------------------------------------------------
        # Keyed by content: re-synthesizing reuses the folder instead of piling up copies.
        listing = "".join(f"{a.key}\0{a.sha256}\n" for a in self.compiled.assets)
        staging = Path(tempfile.gettempdir()) / "bakeoff-cdk-assets" / hashlib.sha256(listing.encode()).hexdigest()[:24]
        for asset in self.compiled.assets:
            target = staging / asset.key
            if not target.exists() or target.read_bytes() != asset.body:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(asset.body)
        definition_text = tokenized.render(bucket.bucket_name, role.role_arn, mlflow_arn)
        sources = [s3deploy.Source.asset(str(staging))]
        inline = len(tokenized.text) <= inline_definition_limit
        definition_key = None
        if not inline:
            digest = hashlib.sha256(tokenized.text.encode()).hexdigest()
            definition_key = f"{prefix}/{spec.name}/definition/{digest}.json"
            sources.append(s3deploy.Source.data(definition_key, definition_text))
        self.assets = s3deploy.BucketDeployment(
            self, "Assets", sources=sources, destination_bucket=bucket,
            prune=False, retain_on_delete=True, extract=True,
            memory_limit=512)
        self._acknowledge_deployment(stack, bucket)

        # --- the pipeline -----------------------------------------------------------
        body = ({"PipelineDefinitionBody": definition_text} if inline else
                {"PipelineDefinitionS3Location": {"Bucket": bucket.bucket_name, "Key": definition_key}})
        self.definition_inline = inline
        self.pipeline = sagemaker.CfnPipeline(
            self, "Pipeline", pipeline_name=self.pipeline_name, role_arn=role.role_arn,
            pipeline_definition=body, pipeline_description=f"bakeoff {spec.name}: {spec.description}"[:3072],
            tags=[{"key": "bakeoff:name", "value": spec.name}])
        self.pipeline.node.add_dependency(self.assets)
        self.pipeline_arn = stack.format_arn(service="sagemaker", resource="pipeline",
                                             resource_name=self.pipeline_name.lower())

        if schedule is not None:
            self.add_schedule(schedule, schedule_parameters or {})

        CfnOutput(self, "PipelineName", value=self.pipeline_name)
        CfnOutput(self, "PipelineArn", value=self.pipeline_arn)
        CfnOutput(self, "BucketName", value=bucket.bucket_name)
        CfnOutput(self, "RoleArn", value=role.role_arn)
        if mlflow_arn:
            CfnOutput(self, "MlflowTrackingServerArn", value=mlflow_arn)

    # --- policies -----------------------------------------------------------------------
    @staticmethod
    def execution_policy(stack: Stack, bucket: s3.IBucket, prefix: str, definition: dict, role_arn: str,
                         mlflow_arn: str | None) -> list[tuple[iam.PolicyStatement, str | None]]:
        """Least privilege for the pipeline and its jobs: their own jobs, this bucket's
        prefix, pulls of exactly the images the spec names, their logs and metrics.
        Each statement comes with the reason its wildcards are accepted (None: none)."""
        job = lambda kind: stack.format_arn(service="sagemaker", resource=kind, resource_name="pipelines-*")
        statements = [
            (iam.PolicyStatement(
                sid="PipelineJobs",
                actions=["sagemaker:CreateTrainingJob", "sagemaker:DescribeTrainingJob", "sagemaker:StopTrainingJob",
                         "sagemaker:CreateProcessingJob", "sagemaker:DescribeProcessingJob",
                         "sagemaker:StopProcessingJob", "sagemaker:AddTags"],
                resources=[job("training-job"), job("processing-job")]), "job-names"),
            (iam.PolicyStatement(
                sid="PassItselfToJobs", actions=["iam:PassRole"], resources=[role_arn],
                conditions={"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}}), None),
            (iam.PolicyStatement(
                sid="ArtifactsObjects",
                actions=["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"],
                resources=[bucket.arn_for_objects(f"{prefix}/*")]), "prefix-objects"),
            (iam.PolicyStatement(
                sid="ArtifactsList", actions=["s3:ListBucket", "s3:GetBucketLocation"], resources=[bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{prefix}/*", prefix]}}), None),
            (iam.PolicyStatement(
                sid="PullTrainingImages",
                actions=["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer", "ecr:BatchCheckLayerAvailability"],
                resources=[stack.format_arn(service="ecr", account=acct, region=region, resource="repository",
                                            resource_name=repo)
                           for acct, region, repo in _image_repositories(definition)]), None),
            (iam.PolicyStatement(sid="EcrLogin", actions=["ecr:GetAuthorizationToken"], resources=["*"]),
             "unscopable"),
            (iam.PolicyStatement(
                sid="JobLogs", actions=["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents",
                                        "logs:DescribeLogStreams"],
                resources=[stack.format_arn(service="logs", resource="log-group",
                                            resource_name=f"/aws/sagemaker/{kind}:*",
                                            arn_format=ArnFormat.COLON_RESOURCE_NAME)
                           for kind in ("TrainingJobs", "ProcessingJobs")]), "log-streams"),
            (iam.PolicyStatement(
                sid="JobMetrics", actions=["cloudwatch:PutMetricData"], resources=["*"],
                conditions={"StringLike": {"cloudwatch:namespace": "/aws/sagemaker/*"}}), "unscopable"),
        ]
        for bucket_name, key_prefix in _external_data(definition):
            sid = hashlib.sha256((bucket_name + key_prefix).encode()).hexdigest()[:8]
            statements.append((iam.PolicyStatement(
                sid=f"ReadData{sid}", actions=["s3:GetObject", "s3:ListBucket"],
                resources=[f"arn:{Aws.PARTITION}:s3:::{bucket_name}",
                           f"arn:{Aws.PARTITION}:s3:::{bucket_name}/{key_prefix}*"]), "prefix-objects"))
        if mlflow_arn:
            statements.append((iam.PolicyStatement(
                sid="MlflowTracking", actions=list(MLFLOW_ACTIONS), resources=[mlflow_arn]), None))
        return statements

    def _acknowledge_deployment(self, stack: Stack, bucket: s3.IBucket) -> None:
        """The findings on CDK's own BucketDeployment handler (a stack-level singleton)."""
        handlers = [c for c in stack.node.children if c.node.id.startswith("Custom::CDKBucketDeployment")]
        assets_bucket = None
        if isinstance(stack.synthesizer, DefaultStackSynthesizer):
            qualifier = stack.node.try_get_context("@aws-cdk/core:bootstrapQualifier") or \
                DefaultStackSynthesizer.DEFAULT_QUALIFIER
            assets_bucket = (DefaultStackSynthesizer.DEFAULT_FILE_ASSETS_BUCKET_NAME
                             .replace("${Qualifier}", qualifier)
                             .replace("${AWS::AccountId}", nag_text(stack, stack.account))
                             .replace("${AWS::Region}", nag_text(stack, stack.region)))
        for handler in handlers:
            role = handler.node.find_child("ServiceRole")
            self.acknowledge(role, nag_id("AwsSolutions-IAM4", "Policy::arn:<AWS::Partition>:iam::aws:policy/"
                                                               "service-role/AWSLambdaBasicExecutionRole"),
                             "deployment-managed-policy")
            for action in ("s3:GetObject*", "s3:GetBucket*", "s3:List*", "s3:DeleteObject*", "s3:Abort*"):
                self.acknowledge(role, nag_id("AwsSolutions-IAM5", f"Action::{action}"), "deployment-actions")
            objects = [nag_text(stack, bucket.arn_for_objects("*"))]
            if assets_bucket:
                objects.append(f"arn:<AWS::Partition>:s3:::{assets_bucket}/*")
            for evidence in objects:
                self.acknowledge(role, nag_id("AwsSolutions-IAM5", f"Resource::{evidence}"), "deployment-objects")
            self.acknowledge(handler, nag_id("AwsSolutions-L1"), "deployment-runtime")

    # --- extras -------------------------------------------------------------------------
    def add_schedule(self, schedule: events.Schedule, parameters: dict[str, str]) -> events.CfnRule:
        events_role = iam.Role(self, "ScheduleRole", assumed_by=iam.ServicePrincipal("events.amazonaws.com"),
                               description=f"Starts bake-off {self.spec.name} on a schedule")
        self.grant_start_execution(events_role)
        self.acknowledge(events_role, nag_id("AwsSolutions-IAM5", f"Resource::{nag_text(Stack.of(self), self.pipeline_arn)}/execution/*"),
                         "executions")
        target = {"id": "bakeoff", "arn": self.pipeline_arn, "roleArn": events_role.role_arn}
        if parameters:
            target["sageMakerPipelineParameters"] = {"pipelineParameterList": [
                {"name": k, "value": v} for k, v in sorted(parameters.items())]}
        return events.CfnRule(self, "Schedule", schedule_expression=schedule.expression_string,
                              state="ENABLED", targets=[target],
                              description=f"start bakeoff pipeline {self.pipeline_name}")

    def grant_start_execution(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let `grantee` start, watch and stop executions of this pipeline (and nothing else)."""
        return iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["sagemaker:StartPipelineExecution", "sagemaker:DescribePipelineExecution",
                     "sagemaker:ListPipelineExecutionSteps", "sagemaker:StopPipelineExecution"],
            resource_arns=[self.pipeline_arn, f"{self.pipeline_arn}/execution/*"])

MLFLOW_ACTIONS = (
    "sagemaker-mlflow:AccessUI", "sagemaker-mlflow:CreateExperiment", "sagemaker-mlflow:GetExperiment",
    "sagemaker-mlflow:GetExperimentByName", "sagemaker-mlflow:SearchExperiments", "sagemaker-mlflow:CreateRun",
    "sagemaker-mlflow:UpdateRun", "sagemaker-mlflow:GetRun", "sagemaker-mlflow:SearchRuns",
    "sagemaker-mlflow:LogBatch", "sagemaker-mlflow:LogMetric", "sagemaker-mlflow:LogParam",
    "sagemaker-mlflow:SetTag", "sagemaker-mlflow:GetMetricHistory",
)


def _external_data(definition: dict) -> list[tuple[str, str]]:
    """Buckets/prefixes of data channels the spec gives as s3:// URIs (read-only)."""
    out = set()
    for p in definition.get("Parameters", []):
        if p["Name"].endswith("DataUri") and isinstance(p.get("DefaultValue"), str):
            uri = p["DefaultValue"]
            bucket, _, key = uri[len("s3://"):].partition("/")
            if "sentinel" not in bucket:
                out.add((bucket, key))
    return sorted(out)
