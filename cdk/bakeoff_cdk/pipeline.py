"""`BakeoffPipeline` for Python apps: the jsii construct (cdk/construct, built into the Python package
`bakeoff_cdk_construct` by jsii-pacmak), given a spec where it takes a bundle.

Everything it deploys is the jsii construct's: the buckets, the execution role from the bundle's grants, the
content-addressed assets, the pipeline, the MLflow tracking server, the schedule, notifications, grants, events
and metrics. This layer adds only what a Python app can do that a TypeScript app cannot: compile the spec in
the same process, for the stack's region, with bakeoff's own compiler (`bakeoff synth --cdk-out`'s function),
so a Python app and a TypeScript app deploying the same spec synthesize the same template."""
from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import bakeoff_cdk_construct as construct_library
from aws_cdk import Duration, RemovalPolicy, Size, Stack, Stage
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from constructs import Construct

from bakeoff.pipelines.errors import SpecError
from bakeoff.pipelines.sagemaker.cdk.mlflow_server import check_server_region
from bakeoff.pipelines.spec.loader import load_spec
from bakeoff.pipelines.spec.model import BakeoffSpec

from .bundles import staged_bundle
from .region import stack_region

# The keyword names of bakeoff_cdk 0.1.0 that the jsii construct spells otherwise: still taken, with a warning.
_RENAMED = {"compile_cache_expiry_days": "compile_cache_expiry", "deployment_memory_mb": "deployment_memory_limit"}


class BakeoffPipeline(construct_library.BakeoffPipeline):
    """A bake-off as a SageMaker pipeline, compiled by bakeoff from `spec` for the stack's region.

    Creates (or takes) the artifacts bucket and the SageMaker execution role with exactly what the definition
    uses, deploys the content-addressed code, data and config assets, and defines the
    `AWS::SageMaker::Pipeline`; optionally a managed MLflow tracking server the jobs track to, a schedule and
    notifications of each verdict. The same construct as the jsii library's `BakeoffPipeline` (its methods,
    attributes, `from_pipeline_name`), which a TypeScript, Java, Go or .NET app uses with a bundle from
    `bakeoff synth --cdk-out`.

    The stack needs a concrete region (`env=Environment(region=...)`): the images, their ECR grants and the
    registry account follow it. A spec that names `storage.region` must name the same one.
    """

    def __init__(self, scope: Construct, construct_id: str, *, spec: BakeoffSpec | str | Path,
                 pipeline_name: str | None = None, bucket: s3.IBucket | None = None, role: iam.IRole | None = None,
                 allowed_data_uris: Sequence[str] = (), notify: sns.ITopic | events.IRuleTarget | None = None,
                 mlflow_tracking_server: bool = False, mlflow_server_size: str | None = None,
                 mlflow_version: str | None = None, compile_cache_expiry: Duration | None = None,
                 removal_policy: RemovalPolicy | None = None, inline_definition_limit: int | None = None,
                 deployment_memory_limit: int | None = None, deployment_storage: Size | None = None,
                 schedule: events.Schedule | None = None, schedule_parameters: Mapping[str, str] | None = None,
                 **renamed: Any) -> None:
        """
        :param spec: the bake-off: a spec, or the path of its YAML file (a bad spec stops synth with the CLI's
            one-line error).
        :param pipeline_name: the SageMaker pipeline's name (and the MLflow tracking server's). Default
            `bakeoff-<spec name>-<8 hex of the stack name and construct path>`: stable for a stack, distinct
            between stacks. A stack output gives it.
        :param bucket: the artifacts bucket. Default: an encrypted, versioned, TLS-only bucket with access logs.
        :param role: the SageMaker execution role, instead of one this construct makes. A given role gets no
            grants: it must already allow what the role made here would (`bakeoff synth --cdk-out DIR` lists the
            statements in DIR/manifest.json, executionGrants), and read `allowed_data_uris` (a synth warning
            names them).
        :param allowed_data_uris: `s3://bucket/prefix` locations a `*DataUri` pipeline parameter may be pointed
            at when an execution starts (`bakeoff start --param TrainDataUri=...`): the execution role may read
            them. The spec's own channels and the values in `schedule_parameters` are allowed without being listed.
        :param notify: an SNS topic, or any EventBridge target, told each execution's outcome (`add_notification`).
        :param mlflow_tracking_server: create a SageMaker MLflow tracking server the jobs track to, named as the
            pipeline, its artifacts under `<prefix>/mlflow/` of the bucket.
        :param mlflow_server_size: the tracking server's size (Small, Medium or Large). Default Small.
        :param mlflow_version: the tracking server's MLflow version. Default "3.0", the version AWS pairs with the
            client every job installs; another is created as given, with a synth warning when the jobs' client is
            not the one AWS names for it.
        :param compile_cache_expiry: how long compile caches are kept in the bucket this construct creates.
            Default 30 days.
        :param removal_policy: RETAIN (default) keeps both buckets and their TLS-only policies when the stack is
            deleted; DESTROY empties them (every object version) and deletes them.
        :param inline_definition_limit: the longest definition (characters, deploy-time values included) written
            into the template; a longer one is deployed to the bucket. Default 40000.
        :param deployment_memory_limit: the asset deployment Lambda's memory (MiB). Default 512.
        :param deployment_storage: the asset deployment Lambda's /tmp. Default: twice the assets plus 256 MiB,
            512 MiB to 10 GiB.
        :param schedule: start the pipeline on this schedule (`add_schedule`).
        :param schedule_parameters: the pipeline parameters a scheduled execution starts with.
        """
        for old, new in _RENAMED.items():
            if old in renamed:
                warnings.warn(f"BakeoffPipeline({old}=...) is deprecated: use {new}= (the jsii construct's name; "
                              "CHANGELOG.md)", DeprecationWarning, stacklevel=2)
        compile_cache_expiry = compile_cache_expiry or _days(renamed.pop("compile_cache_expiry_days", None))
        deployment_memory_limit = deployment_memory_limit or renamed.pop("deployment_memory_mb", None)
        if renamed:
            raise TypeError(f"BakeoffPipeline() got an unexpected keyword argument {next(iter(renamed))!r}")
        if not isinstance(spec, BakeoffSpec):
            spec = load_spec(spec)
        stack = Stack.of(scope)
        region = stack_region(stack, spec)
        if mlflow_tracking_server:
            check_server_region(region, "mlflow_tracking_server")
        bundle = staged_bundle(spec, region, mlflow_tracking_server, Stage.of(scope).outdir)
        try:
            super().__init__(
                scope, construct_id, bundle_dir=str(bundle), pipeline_name=pipeline_name, bucket=bucket, role=role,
                allowed_data_uris=list(allowed_data_uris) or None, notify=notify,
                mlflow_tracking_server=mlflow_tracking_server, mlflow_server_size=mlflow_server_size,
                mlflow_version=mlflow_version, compile_cache_expiry=compile_cache_expiry,
                removal_policy=removal_policy, inline_definition_limit=inline_definition_limit,
                deployment_memory_limit=deployment_memory_limit, deployment_storage=deployment_storage,
                schedule=schedule, schedule_parameters=dict(schedule_parameters) if schedule_parameters else None)
        except RuntimeError as exc:  # the construct's refusal, thrown in its JavaScript: one line, as a spec error
            raise SpecError(f"{stack.node.path}/{construct_id}: {str(exc).splitlines()[0]}") from None
        self.spec = spec


def _days(days: int | None) -> Duration | None:
    return None if days is None else Duration.days(days)
