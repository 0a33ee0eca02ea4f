"""The MLflow version of the tracking server a construct creates, and the client AWS pairs with each.

The version is set explicitly: left out, SageMaker creates "the latest version", and AWS recommends "always
specifying the latest version explicitly because the underlying MLflow APIs can change"
(docs.aws.amazon.com/sagemaker/latest/dg/mlflow-create-tracking-server-cli.html). 3.0 is the newest tracking
server release AWS pairs with a client ("For tracking server 3.0.x, use mlflow==3.0.0",
docs.aws.amazon.com/sagemaker/latest/dg/mlflow-track-experiments.html); the jobs install that client
(entrypoints/bakeoff_runtime/tracking/mlflow-requirements*.txt), since MLflow's own servers "may not work with the
newer version of the SDK" (mlflow.org/docs/latest/self-hosting/migration). The construct (cdk/construct) reads them
through the bundle's manifest."""
from __future__ import annotations

import re

from bakeoff.estimators.images import partition
from bakeoff.pipelines.errors import SpecError

MLFLOW_SERVER_VERSION = "3.0"
# AWS's client release for each tracking server version (the same mlflow-track-experiments page).
MLFLOW_CLIENT_FOR_SERVER = {"2.13": "2.13.2", "2.16": "2.16.2", "3.0": "3.0.0"}
# CloudFormation AWS::SageMaker::MlflowTrackingServer MlflowVersion: pattern ^\d+(\.\d+)+$, 1-32 characters;
# changing it on a deployed stack "requires: Some interruptions" (the resource's CloudFormation reference).
MLFLOW_VERSION_PATTERN = re.compile(r"^\d+(\.\d+)+$")
# sagemaker-mlflow's client resolves tracking servers in these partitions only
# (mlflow_sagemaker_helpers._get_dns_suffix, aws_facts.md section 8).
PARTITIONS = ("aws", "aws-us-gov")


def check_server_region(region: str, field: str) -> None:
    if partition(region) not in PARTITIONS:
        raise SpecError(f"a SageMaker MLflow tracking server cannot be used from {region}: the "
                        "sagemaker-mlflow client supports the aws and aws-us-gov partitions only", field=field)
