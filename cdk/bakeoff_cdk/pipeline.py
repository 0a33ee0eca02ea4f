"""The `BakeoffPipeline` construct: bucket, least-privilege role, code and data
assets, the SageMaker pipeline from bakeoff's own compiler, and the optional
MLflow tracking server and schedule."""
from __future__ import annotations

import hashlib
import json
import math
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import Annotations, CfnOutput, DefaultStackSynthesizer, Duration, RemovalPolicy, Size, Stack, Token
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3deploy
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_sns as sns
from constructs import Construct

from bakeoff.pipelines.errors import SpecError
from bakeoff.pipelines.sagemaker.cdk.mlflow_server import (  # noqa: F401 - kept importable from here
    MLFLOW_CLIENT_FOR_SERVER,
    MLFLOW_SERVER_VERSION,
    MLFLOW_VERSION_PATTERN,
    check_server_region,
)
from bakeoff.pipelines.spec.loader import load_spec
from bakeoff.pipelines.spec.model import BakeoffSpec

from .definition import (
    MAX_DEFINITION_CHARS,
    TokenizedDefinition,
    content_key,
    deployed_size_bound,
    marker_values,
    render_joined,
    render_markers,
    stack_region,
    tokenized_definition,
)
from .policies import Grant, check_data_uri, data_uris, execution_grants, s3_read, start_grants
from .security import Acknowledger, nag_id, nag_text

# Inline definitions count against the template (CloudFormation: 1 MB from S3); larger ones
# go through S3. Measured on the rendered definition, tokens included.
INLINE_DEFINITION_LIMIT = 40_000
# SageMaker's PipelineName and MLflow's TrackingServerName: 1-256, this pattern (botocore
# sagemaker model, aws_facts.md section 9 and instance_facts.md section 5).
NAME_PATTERN = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,255}$")
RULE_NAME_MAX = 64  # EventBridge rule names: 1-64 of [.-_A-Za-z0-9]
# CDK's BucketDeployment handler keeps each source zip in /tmp and unpacks it next to it
# (aws-s3-deployment bucket-deployment-handler s3_deploy): twice the assets, plus room.
LAMBDA_STORAGE_MIB = (512, 10_240)
DEPLOYMENT_HEADROOM_MIB = 256
_MIB = 1024 * 1024
# Deployed lengths, to bound the definition's size before deploy: S3 bucket names are at
# most 63 characters; a role this construct creates has a name of at most 64.
_LONGEST_BUCKET = 63
_LONGEST_OWN_ROLE_ARN = len("arn:aws-us-gov:iam::123456789012:role/") + 64
_LONGEST_ROLE_ARN = 2048


@jsii.implements(s3deploy.ISource)
class _MarkedSource:
    """A folder for CDK's BucketDeployment whose files carry deploy-time markers: the handler
    replaces each marker by its value (a token resolved by CloudFormation) as it unpacks."""

    def __init__(self, directory: Path, markers: dict[str, str]) -> None:
        self.directory, self.markers = directory, markers

    def bind(self, scope: Construct, *, handler_role: iam.IRole | None = None) -> s3deploy.SourceConfig:
        config = s3deploy.Source.asset(str(self.directory)).bind(scope, handler_role=handler_role)
        return s3deploy.SourceConfig(bucket=config.bucket, zip_object_key=config.zip_object_key,
                                     markers=self.markers or None)


def _stage(files: dict[str, bytes], kind: str) -> Path:
    """Write files into a folder keyed by their content: re-synthesizing reuses the folder."""
    listing = "".join(f"{k}\0{hashlib.sha256(b).hexdigest()}\n" for k, b in sorted(files.items()))
    staging = Path(tempfile.gettempdir()) / f"bakeoff-cdk-{kind}" / hashlib.sha256(listing.encode()).hexdigest()[:24]
    for key, body in files.items():
        target = staging / key
        if not target.exists() or target.read_bytes() != body:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(body)
    return staging


def default_pipeline_name(stack: Stack, scope: Construct, spec: BakeoffSpec) -> str:
    """`bakeoff-<name>-<8 hex>`: the hex is of the stack's name and the construct's path in
    it, so the same spec in two stacks (or twice in one) gets two pipelines, and a stack
    keeps its name across deploys. (`bakeoff deploy` keeps `bakeoff-<name>`.)"""
    stack_id = stack.stack_name if not Token.is_unresolved(stack.stack_name) else stack.node.path
    inside = scope.node.path[len(stack.node.path):].lstrip("/")
    return f"bakeoff-{spec.name}-{content_key(stack_id, inside)[:8]}"


class BakeoffPipeline(Construct):
    """A bake-off as a SageMaker pipeline, compiled by bakeoff from `spec` for the stack's region.

    Creates (or takes) the artifacts bucket and the SageMaker execution role,
    uploads the content-addressed code/data/config assets, and defines the
    `AWS::SageMaker::Pipeline`. Optional: a managed MLflow tracking server wired
    into the jobs' tracking URI, and an EventBridge schedule that starts it.

    The stack needs a concrete region (`env=Environment(region=...)`): the images, their
    ECR grants and the registry account follow it. A spec that names `storage.region`
    must name the same one.
    """

    def __init__(self, scope: Construct, construct_id: str, *, spec: BakeoffSpec | str | Path,
                 bucket: s3.IBucket | None = None, role: iam.IRole | None = None,
                 compile_cache_expiry_days: int = 30, mlflow_tracking_server: bool = False,
                 mlflow_server_size: str = "Small", mlflow_version: str = MLFLOW_SERVER_VERSION,
                 schedule: events.Schedule | None = None,
                 schedule_parameters: dict[str, str] | None = None,
                 notify: sns.ITopic | events.IRuleTarget | None = None,
                 inline_definition_limit: int = INLINE_DEFINITION_LIMIT,
                 removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
                 pipeline_name: str | None = None,
                 allowed_data_uris: Sequence[str] = (),
                 deployment_memory_mb: int = 512,
                 deployment_storage: Size | None = None) -> None:
        """
        :param role: the SageMaker execution role, instead of one this construct makes. A given role gets no
            grants: it must already allow what the role made here would (`bakeoff synth --cdk-out DIR` lists the
            statements in DIR/manifest.json, executionGrants), and read `allowed_data_uris` (a synth warning
            names them).
        :param pipeline_name: the SageMaker pipeline's name (and the MLflow tracking server's).
            Default `bakeoff-<spec name>-<8 hex of the stack name and construct path>`: stable
            for a stack, distinct between stacks. A stack output gives it.
        :param allowed_data_uris: `s3://bucket/prefix` locations a `*DataUri` pipeline parameter may
            be pointed at when an execution starts (`bakeoff start --param TrainDataUri=...`): the
            execution role may read them. The spec's own channels and the values in
            `schedule_parameters` are allowed without being listed.
        :param mlflow_version: the MLflow version of the tracking server `mlflow_tracking_server=True`
            creates (CloudFormation `MlflowVersion`). Default `MLFLOW_SERVER_VERSION` ("3.0"): the newest
            version AWS pairs with a client release, and the client every job installs (mlflow-skinny 3.0.0).
            Another version is created as given, with a synth warning when the jobs' client is not the one AWS
            names for it; changing it on a deployed server interrupts it.
        :param notify: an SNS topic, or any EventBridge target, told each execution's outcome: the verdict
            (pass, fail or inconclusive, with the gate's reason and the command that reports it) or a failed
            step that leaves the execution without one (add_notification; bakeoff_cdk/notifications.py).
        :param removal_policy: RETAIN (default) keeps both buckets and their bucket policies
            (TLS-only) when the stack is deleted; DESTROY empties them (every object version) and
            deletes them. The MLflow tracking server is deleted either way.
        :param deployment_storage: the asset-deployment Lambda's /tmp. Default: sized from the
            assets (twice their size plus headroom, 512 MiB to 10 GiB).
        """
        super().__init__(scope, construct_id)
        # Access-log delivery through a bucket policy, not the legacy ACL.
        self.node.set_context("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy", True)
        self.acknowledge = Acknowledger()
        if not isinstance(spec, BakeoffSpec):
            spec = load_spec(spec)  # a bad spec stops synth with the CLI's one-line error
        self.spec = spec
        stack = Stack.of(self)
        self.region = region = stack_region(stack, spec)
        if mlflow_tracking_server:
            check_server_region(region, "mlflow_tracking_server")
        prefix = spec.storage.prefix
        self.pipeline_name = pipeline_name or default_pipeline_name(stack, self, spec)
        if not NAME_PATTERN.match(self.pipeline_name):
            raise SpecError(f"pipeline name {self.pipeline_name!r} must be 1-256 letters, digits and hyphens, "
                            "starting and ending with a letter or digit", field="pipeline_name")
        self.pipeline_arn = stack.format_arn(service="sagemaker", resource="pipeline",
                                             resource_name=self.pipeline_name.lower())
        tokenized = tokenized_definition(spec, with_mlflow_server=mlflow_tracking_server, region=region)
        self.compiled = tokenized.compiled
        self._data_parameters = data_uris(self.compiled.definition)
        self._parameters = {p["Name"]: p for p in self.compiled.definition.get("Parameters", [])}
        schedule_parameters = dict(schedule_parameters or {})
        self._check_parameters(schedule_parameters, "schedule_parameters")
        allowed = [check_data_uri(u, "allowed_data_uris") for u in allowed_data_uris]

        # --- storage, the MLflow tracking server, the execution role -------------------
        self.access_logs_bucket = None
        if bucket is None:
            bucket = self._own_buckets(prefix, removal_policy, compile_cache_expiry_days)
        self.bucket = bucket
        self.mlflow_server = None
        mlflow_arn = None
        if mlflow_tracking_server:
            mlflow_arn = self._mlflow_tracking_server(bucket, prefix, mlflow_server_size, mlflow_version)
        self.mlflow_arn = mlflow_arn

        # --- execution role ---------------------------------------------------------
        self._own_role = role is None
        self._read_grants = 0
        self._allowed: set[str] = set()
        if role is None:
            role = iam.Role(self, "ExecutionRole", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
                            description=f"SageMaker execution role of bake-off {spec.name}")
            mlflow_arns = [mlflow_arn] if mlflow_arn else []
            user_uri = spec.mlflow.tracking_uri or ""
            if not mlflow_arn and spec.mlflow.enabled and re.match(r"^arn:aws[a-z\-]*:sagemaker:", user_uri):
                mlflow_arns.append(user_uri)  # the spec's own SageMaker tracking server
            for grant in execution_grants(stack, bucket, prefix, self.compiled.definition, role.role_arn,
                                          pipeline_arn=self.pipeline_arn, region=region, mlflow_arns=mlflow_arns):
                self._attach(role, grant)
        self.role = role
        self.allow_data_uris(*allowed, *[v for k, v in schedule_parameters.items() if k in self._data_parameters])

        # --- assets and the definition -----------------------------------------------
        inline_text, definition_key = self._deploy_assets(stack, tokenized, bucket, role, mlflow_arn, prefix,
                                                          inline_definition_limit, deployment_memory_mb,
                                                          deployment_storage)
        inline = definition_key is None

        # --- the pipeline -----------------------------------------------------------
        body = ({"PipelineDefinitionBody": inline_text} if inline else
                {"PipelineDefinitionS3Location": {"Bucket": bucket.bucket_name, "Key": definition_key}})
        self.definition_inline = inline
        self.definition_key = definition_key
        self.pipeline = sagemaker.CfnPipeline(
            self, "Pipeline", pipeline_name=self.pipeline_name, role_arn=role.role_arn,
            pipeline_definition=body, pipeline_description=f"bakeoff {spec.name}: {spec.description}"[:3072],
            # A JSON-typed property in CDK's L1: written as given, so in CloudFormation's own casing
            # (AWS::SageMaker::Pipeline ParallelismConfiguration: {"MaxParallelExecutionSteps": Integer}).
            parallelism_configuration={"MaxParallelExecutionSteps": spec.max_parallel_steps},
            tags=[{"key": "bakeoff:name", "value": spec.name},
                  {"key": "bakeoff:stack", "value": stack.stack_name}])
        self.pipeline.node.add_dependency(self.assets)
        if self._own_role:  # the role's policies exist before anything can run as it
            _depend_on_policies(self.pipeline, role)

        self.schedule_rule = None
        if schedule is not None:
            self.schedule_rule = self.add_schedule(schedule, schedule_parameters)
        self.notification_rules: list[events.Rule] = []
        if notify is not None:
            self.add_notification(notify)

        CfnOutput(self, "PipelineName", value=self.pipeline_name,
                  description="the SageMaker pipeline's name (bakeoff start NAME --region REGION)")
        CfnOutput(self, "PipelineArn", value=self.pipeline_arn)
        CfnOutput(self, "StartCommand", value=f"bakeoff start {self.pipeline_name} --region {region}")
        CfnOutput(self, "BucketName", value=bucket.bucket_name)
        CfnOutput(self, "RoleArn", value=role.role_arn)
        if mlflow_arn:
            CfnOutput(self, "MlflowTrackingServerArn", value=mlflow_arn)

    def _deploy_assets(self, stack: Stack, tokenized: TokenizedDefinition, bucket: s3.IBucket, role: iam.IRole,
                       mlflow_arn: str | None, prefix: str, inline_definition_limit: int,
                       deployment_memory_mb: int, deployment_storage: Size | None) -> tuple[Any, str | None]:
        """The assets deployed to the bucket (those naming the bucket, role or tracking server rendered at
        deploy time under keys of this stack's own), and the definition: (its inline text, or the key it is
        deployed under when it is too large for the template)."""
        spec, region = self.spec, self.region
        values = tokenized.values(bucket.bucket_name, role.role_arn, mlflow_arn)
        identity = "\0".join([region, nag_text(stack, stack.account), self.pipeline_name,
                              json.dumps(stack.resolve(values), sort_keys=True)])
        text = tokenized.text
        static: dict[str, bytes] = {}
        rendered: dict[str, bytes] = {}
        for asset in self.compiled.assets:
            if not any(sentinel.encode() in asset.body for sentinel in values):
                static[asset.key] = asset.body
                continue
            # The evaluation config names the tracking server: it is rendered at deploy time,
            # under a key of its own for this stack (a shared bucket never mixes two stacks').
            key = re.sub(r"/[0-9a-f]{64}/", f"/{content_key(asset.sha256, identity)}/", asset.key, count=1)
            text = text.replace(asset.key, key)
            body, _ = render_markers(asset.body.decode(), values)
            rendered[key] = body.encode()
        self._check_deployed_size(text, tokenized, role)
        inline_text = render_joined(text, values)
        self.definition_size = len(json.dumps(stack.resolve(inline_text), separators=(",", ":")))
        inline = self.definition_size <= inline_definition_limit
        definition_key = None
        if not inline:
            definition_key = f"{prefix}/{spec.name}/definition/{content_key(text, identity)}.json"
            rendered[definition_key] = render_markers(text, values)[0].encode()
        markers = {marker: value for marker, value in marker_values(values).items()
                   if any(marker.encode() in body for body in rendered.values())}
        sources: list[s3deploy.ISource] = [s3deploy.Source.asset(str(_stage(static, "assets")))]
        if rendered:
            sources.append(_MarkedSource(_stage(rendered, "rendered"), markers))
        total = sum(len(b) for b in static.values()) + sum(len(b) for b in rendered.values())
        self.assets = s3deploy.BucketDeployment(
            self, "Assets", sources=sources, destination_bucket=bucket,
            prune=False, retain_on_delete=True, extract=True, memory_limit=deployment_memory_mb,
            ephemeral_storage_size=self._deployment_storage(total, deployment_storage))
        self._acknowledge_deployment(stack, bucket)
        return inline_text, definition_key

    def _own_buckets(self, prefix: str, removal_policy: RemovalPolicy,
                     compile_cache_expiry_days: int) -> s3.IBucket:
        """The artifacts bucket and its access-log bucket, TLS only, versioned, with lifecycle rules."""
        destroy = removal_policy == RemovalPolicy.DESTROY
        self.access_logs_bucket = s3.Bucket(
            self, "AccessLogs", encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL, enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_PREFERRED, versioned=True,
            removal_policy=removal_policy, auto_delete_objects=destroy,
            lifecycle_rules=[s3.LifecycleRule(id="expire-access-logs", expiration=Duration.days(365))])
        bucket = s3.Bucket(
            self, "Artifacts", encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL, enforce_ssl=True, versioned=True,
            server_access_logs_bucket=self.access_logs_bucket, server_access_logs_prefix="artifacts/",
            removal_policy=removal_policy, auto_delete_objects=destroy,
            lifecycle_rules=[
                s3.LifecycleRule(id="expire-compile-caches", prefix=f"{prefix}/compile-cache/",
                                 expiration=Duration.days(compile_cache_expiry_days),
                                 noncurrent_version_expiration=Duration.days(1)),
                s3.LifecycleRule(id="expire-noncurrent-versions",
                                 noncurrent_version_expiration=Duration.days(30),
                                 abort_incomplete_multipart_upload_after=Duration.days(7)),
            ])
        for b in (bucket, self.access_logs_bucket):
            # A retained bucket keeps its policy (TLS only, log delivery): without this the
            # policy is deleted with the stack and the orphan accepts plain HTTP.
            b.policy.apply_removal_policy(removal_policy)
        # DESTROY: CDK's auto-delete-objects provider empties them first, every version and
        # delete marker (aws-cdk-lib custom-resource-handlers aws-s3/auto-delete-objects-handler:
        # ListObjectVersions, then DeleteObjects of Versions and DeleteMarkers), so a versioned
        # bucket with objects no longer fails the delete. cdk-nag's AwsSolutions pack reports
        # nothing on that provider (its role and function are plain CfnResources).
        return bucket

    def _mlflow_tracking_server(self, bucket: s3.IBucket, prefix: str, size: str, version: str) -> str:
        """The SageMaker MLflow tracking server and its role (artifacts under the prefix only); its ARN."""
        spec = self.spec
        self._check_mlflow_version(version)
        mlflow_role = iam.Role(self, "MlflowRole", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
                               description=f"MLflow tracking server of bake-off {spec.name}")
        artifacts = bucket.arn_for_objects(f"{prefix}/mlflow/*")
        self._attach(mlflow_role, Grant("Artifacts", [iam.PolicyStatement(
            sid="MlflowArtifacts",
            actions=["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"],
            resources=[artifacts])], "mlflow-artifacts", [artifacts]))
        mlflow_role.add_to_policy(iam.PolicyStatement(
            actions=["s3:ListBucket", "s3:GetBucketLocation"], resources=[bucket.bucket_arn]))
        self.mlflow_server = sagemaker.CfnMlflowTrackingServer(
            self, "MlflowServer", tracking_server_name=self.pipeline_name,
            artifact_store_uri=f"s3://{bucket.bucket_name}/{prefix}/mlflow",
            role_arn=mlflow_role.role_arn, tracking_server_size=size,
            mlflow_version=version, automatic_model_registration=False)
        return self.mlflow_server.attr_tracking_server_arn

    # --- policies -----------------------------------------------------------------------
    def _attach(self, role: iam.IRole, grant: Grant, scope: Construct | None = None) -> None:
        """Statements without wildcards go to the role's default policy; a group with
        wildcards gets a policy of its own, and cdk-nag's findings are acknowledged on that
        policy only, each by its exact evidence."""
        if grant.reason is None:
            for statement in grant.statements:
                role.add_to_principal_policy(statement)
            return
        policy = iam.Policy(scope or role, grant.name, statements=grant.statements)
        role.attach_inline_policy(policy)
        self._acknowledge_wildcards(policy, [grant])

    def _acknowledge_wildcards(self, policy: iam.Policy, grants: list[Grant]) -> None:
        stack = Stack.of(self)
        done = set()
        for grant in grants:
            for resource in grant.wildcards:
                finding = nag_id("AwsSolutions-IAM5", f"Resource::{nag_text(stack, resource)}")
                if finding not in done:
                    done.add(finding)
                    self.acknowledge(policy, finding, grant.reason)

    def allow_data_uris(self, *uris: str) -> None:
        """Let the execution role read these `s3://bucket/prefix` locations, so a `*DataUri`
        pipeline parameter may point at them when an execution starts."""
        uris = [check_data_uri(u, "allowed_data_uris") for u in uris]
        known = set(self._data_parameters.values()) | self._allowed
        uris = sorted({u for u in uris if u not in known})
        if not uris:
            return
        self._allowed.update(uris)
        if not self._own_role:
            Annotations.of(self).add_warning_v2(
                "bakeoff:data-uris", f"the execution role was given, not made: let it read {', '.join(uris)}")
            return
        self._read_grants += 1
        grant = s3_read(f"ReadAllowedData{self._read_grants if self._read_grants > 1 else ''}", uris)
        self._attach(self.role, grant)

    def _check_mlflow_version(self, version: str) -> None:
        if not isinstance(version, str) or len(version) > 32 or not MLFLOW_VERSION_PATTERN.match(version):
            raise SpecError(f"mlflow_version {version!r} is not an MLflow version such as {MLFLOW_SERVER_VERSION!r} "
                            "(CloudFormation's MlflowVersion: digits and dots, at most 32 characters)",
                            field="mlflow_version")
        server = ".".join(version.split(".")[:2])
        client = MLFLOW_CLIENT_FOR_SERVER.get(server)
        pinned = MLFLOW_CLIENT_FOR_SERVER[MLFLOW_SERVER_VERSION]
        if client != pinned:
            Annotations.of(self).add_warning_v2(
                "bakeoff:mlflow-version",
                f"the jobs install MLflow client {pinned}, which AWS pairs with tracking server "
                f"{MLFLOW_SERVER_VERSION}.x; for a {server}.x server AWS names "
                f"{'mlflow==' + client if client else 'no client release'} (mlflow-track-experiments): "
                "logging may fail (the jobs train regardless and Evaluate back-fills their runs)")

    def _check_parameters(self, parameters: dict[str, str], where: str) -> None:
        for name, value in parameters.items():
            p = self._parameters.get(name)
            if p is None:
                raise SpecError(f"{name!r} is not a parameter of this pipeline ({', '.join(sorted(self._parameters))})",
                                field=where)
            value = str(value)
            if len(value) > 1024:  # StartPipelineExecution: Parameter.Value 0-1024
                raise SpecError(f"{name}: the value is longer than 1024 characters", field=where)
            try:
                if p.get("Type") == "Integer":
                    int(value)
                elif p.get("Type") == "Float":
                    float(value)
            except ValueError:
                raise SpecError(f"{name} takes a {p['Type'].lower()}, not {value!r}", field=where) from None
            if name in self._data_parameters:
                check_data_uri(value, f"{where}.{name}")

    def _check_deployed_size(self, text: str, tokenized: TokenizedDefinition, role: iam.IRole) -> None:
        role_len = (_LONGEST_OWN_ROLE_ARN if self._own_role else
                    len(role.role_arn) if not Token.is_unresolved(role.role_arn) else _LONGEST_ROLE_ARN)
        longest_mlflow = len(f"arn:aws-us-gov:sagemaker:{self.region}:123456789012:mlflow-tracking-server/"
                             f"{self.pipeline_name}")
        longest = dict(zip(tokenized.values("b", "r", "m"), (_LONGEST_BUCKET, role_len, longest_mlflow), strict=True))
        bound = deployed_size_bound(text, longest)
        if bound > MAX_DEFINITION_CHARS:
            raise SpecError(f"the pipeline definition could be {bound} characters once deployed, more than "
                            f"CreatePipeline takes ({MAX_DEFINITION_CHARS}); use fewer seeds or legs")

    def _deployment_storage(self, total_bytes: int, given: Size | None) -> Size:
        low, high = LAMBDA_STORAGE_MIB
        needed = math.ceil(2 * total_bytes / _MIB) + DEPLOYMENT_HEADROOM_MIB
        self.deployment_storage_needed_mib = needed
        if given is not None:
            if given.to_mebibytes() < needed:
                Annotations.of(self).add_warning_v2(
                    "bakeoff:deployment-storage", f"deployment_storage={given.to_mebibytes():.0f} MiB is less than "
                    f"the {needed} MiB the asset deployment needs (its zip and the unpacked files); it may fail")
            return given
        if needed > high:
            raise SpecError(f"the local data and code ({total_bytes / _MIB / 1024:.1f} GiB) are too large for CDK's "
                            "asset deployment (its Lambda has at most 10 GiB of /tmp, and needs twice the assets); "
                            "upload the data to S3 and name it as an s3:// channel", field="data.channels")
        return Size.mebibytes(max(low, math.ceil(needed / 64) * 64))

    def _acknowledge_deployment(self, stack: Stack, bucket: s3.IBucket) -> None:
        """The findings on CDK's own BucketDeployment handlers (stack-level singletons, one
        per memory/storage size, shared by every BakeoffPipeline of the stack): each finding
        once, and the write to each construct's bucket by that construct."""
        done = _acknowledged(stack)

        def once(construct: Construct, finding: str, reason: str) -> None:
            if (construct.node.path, finding) not in done:
                done.add((construct.node.path, finding))
                self.acknowledge(construct, finding, reason)

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
            policy = role.node.find_child("DefaultPolicy")
            once(role, nag_id("AwsSolutions-IAM4", "Policy::arn:<AWS::Partition>:iam::aws:policy/"
                                                   "service-role/AWSLambdaBasicExecutionRole"),
                 "deployment-managed-policy")
            for action in ("s3:GetObject*", "s3:GetBucket*", "s3:List*", "s3:DeleteObject*", "s3:Abort*"):
                once(policy, nag_id("AwsSolutions-IAM5", f"Action::{action}"), "deployment-actions")
            objects = [nag_text(stack, bucket.arn_for_objects("*"))]
            if assets_bucket:
                objects.append(f"arn:<AWS::Partition>:s3:::{assets_bucket}/*")
            for evidence in objects:
                once(policy, nag_id("AwsSolutions-IAM5", f"Resource::{evidence}"), "deployment-objects")
            once(handler, nag_id("AwsSolutions-L1"), "deployment-runtime")

    # --- extras -------------------------------------------------------------------------
    def add_schedule(self, schedule: events.Schedule, parameters: dict[str, str] | None = None) -> events.CfnRule:
        """Start the pipeline on `schedule` (an EventBridge rule on the default bus), with
        `parameters` checked against the pipeline's; `*DataUri` values become readable."""
        parameters = dict(parameters or {})
        self._check_parameters(parameters, "schedule_parameters")
        self.allow_data_uris(*[v for k, v in parameters.items() if k in self._data_parameters])
        stack = Stack.of(self)
        rule_name = self.pipeline_name
        if len(rule_name) > RULE_NAME_MAX:
            rule_name = f"{rule_name[:RULE_NAME_MAX - 9]}-{content_key(rule_name)[:8]}"
        rule_arn = stack.format_arn(service="events", resource="rule", resource_name=rule_name)
        # Confused deputy: EventBridge assumes this role for the one rule only. For event bus
        # rule targets "the value of aws:SourceArn must be the rule ARN" (AWS docs, "Cross-service
        # confused deputy prevention in Amazon EventBridge"); the ARN is built from the rule's
        # fixed name, so the trust policy does not depend on the rule (no cycle).
        events_role = iam.Role(
            self, "ScheduleRole", description=f"Starts bake-off {self.spec.name} on a schedule",
            assumed_by=iam.ServicePrincipal("events.amazonaws.com", conditions={
                "StringEquals": {"aws:SourceAccount": stack.account, "aws:SourceArn": rule_arn}}))
        # A scheduled start needs nothing else (no wildcard, no acknowledgment).
        events_role.add_to_policy(iam.PolicyStatement(actions=["sagemaker:StartPipelineExecution"],
                                                      resources=[self.pipeline_arn]))
        target = {"id": "bakeoff", "arn": self.pipeline_arn, "roleArn": events_role.role_arn}
        if parameters:
            target["sageMakerPipelineParameters"] = {"pipelineParameterList": [
                {"name": k, "value": str(v)} for k, v in sorted(parameters.items())]}
        rule = events.CfnRule(self, "Schedule", name=rule_name, schedule_expression=schedule.expression_string,
                              state="ENABLED", targets=[target],
                              description=f"start bakeoff pipeline {self.pipeline_name}")
        rule.node.add_dependency(self.pipeline)
        _depend_on_policies(rule, events_role)
        self.schedule_role, self.schedule_rule_arn = events_role, rule_arn
        return rule

    def add_notification(self, target: sns.ITopic | events.IRuleTarget) -> list[events.Rule]:
        """Tell `target` each execution's outcome, from SageMaker's own pipeline events: a topic gets one
        line per outcome (pass; fail or inconclusive with the gate's reason; a failed step that leaves the
        execution without a verdict), another EventBridge target the event itself. Call it again for
        another target."""
        from .notifications import add_rules

        scope = Construct(self, f"Notify{len(self.notification_rules) // 4 or ''}")
        rules = add_rules(scope, self.pipeline_arn, f"bakeoff pipeline {self.pipeline_name}", target)
        self.notification_rules += rules
        return rules

    def grant_start_execution(self, grantee: iam.IGrantable) -> iam.Policy | None:
        """Let `grantee` start, watch, stop and report executions of this pipeline (`bakeoff
        start/status/wait/report`) and nothing else: the pipeline and its executions, the
        pipelines-* jobs' descriptions (BillableTimeInSeconds), and the evaluation outputs.

        A role, user or group gets a policy of its own with cdk-nag's findings acknowledged
        on it, by their exact evidence; other principals get the statements directly."""
        stack = Stack.of(self)
        grants = start_grants(stack, self.bucket, f"{self.spec.storage.prefix}/{self.spec.name}/evaluation",
                              self.pipeline_arn, self.compiled.definition, self.region)
        statements = [s for g in grants for s in g.statements]
        principal = grantee.grant_principal
        if not hasattr(principal, "attach_inline_policy"):
            for statement in statements:
                principal.add_to_principal_policy(statement)
            return None
        index = len([c for c in self.node.children if c.node.id.startswith("StartExecution")]) + 1
        policy = iam.Policy(self, f"StartExecution{index}", statements=statements)
        principal.attach_inline_policy(policy)
        self._acknowledge_wildcards(policy, [g for g in grants if g.reason])
        return policy


def _depend_on_policies(resource: Construct, role: iam.Role) -> None:
    """`resource` is created after the role's policies (its ARN it already references)."""
    for child in role.node.children:
        if child.node.id != "Resource":
            resource.node.add_dependency(child)


def _acknowledged(stack: Stack) -> set[tuple[str, str]]:
    """(path, finding) on the stack-level CDK singletons already acknowledged (by any construct)."""
    done = getattr(stack, "_bakeoff_acknowledged", None)
    if done is None:
        done = set()
        stack._bakeoff_acknowledged = done
    return done
