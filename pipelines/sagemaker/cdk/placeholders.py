"""The values a construct fills in at synth time.

The definition and its assets carry sentinels (compiled with values valid in every check: see
bundle.py); the manifest's IAM statements carry `${Name}` placeholders, which a construct
replaces by its tokens (the bucket's ARN, the role's ARN, the stack's partition and account)."""
from __future__ import annotations

from bakeoff.estimators.images import partition

SENTINEL_ACCOUNT = "000000000000"
BUCKET_SENTINEL = "bakeoff-cdk-bucket-sentinel-7f3a"
TAG = "bakeoff-cdk-sentinel-7f3a"

PARTITION, ACCOUNT = "${AWS::Partition}", "${AWS::AccountId}"
BUCKET_ARN, ROLE_ARN, PIPELINE_ARN = "${BucketArn}", "${RoleArn}", "${PipelineArn}"
MLFLOW_ARN = "${MlflowArn}"  # the tracking server a construct creates (a bundle written with mlflow_server)


def role_sentinel(region: str) -> str:
    return f"arn:{partition(region)}:iam::{SENTINEL_ACCOUNT}:role/bakeoff-cdk-role-sentinel-7f3a"


def mlflow_sentinel(region: str) -> str:
    """A tracking server ARN in the stack's own partition and region, so a spec check that
    looks at the ARN's region sees the right one."""
    return f"arn:{partition(region)}:sagemaker:{region}:{SENTINEL_ACCOUNT}:mlflow-tracking-server/{TAG}"


def arn(service: str, region: str, resource: str, account: str = ACCOUNT) -> str:
    """An ARN as CDK's Stack.formatArn writes it for a stack in `region` (the partition and account are the
    stack's)."""
    return f"arn:{PARTITION}:{service}:{region}:{account}:{resource}"


def objects(key: str) -> str:
    """The artifacts bucket's objects matching `key` (s3.IBucket.arnForObjects)."""
    return f"{BUCKET_ARN}/{key}"
