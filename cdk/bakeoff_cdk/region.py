"""The region a stack's bake-off is compiled for: the images, their ECR grants and the registry account all
follow it, and SageMaker pulls images only from its own region."""
from __future__ import annotations

from aws_cdk import Stack, Token

from bakeoff.pipelines.errors import SpecError
from bakeoff.pipelines.sagemaker.cdk.bundle import declared_region
from bakeoff.pipelines.spec.model import BakeoffSpec, sagemaker_regions


def stack_region(stack: Stack, spec: BakeoffSpec) -> str:
    """The stack's region, which must be concrete, a SageMaker region, and the spec's when the spec names one
    (`storage.region`); a spec that leaves it at its default is compiled for the stack's region."""
    region = stack.region
    if Token.is_unresolved(region):
        raise SpecError(f"stack {stack.node.path!r} has no concrete region, so bake-off {spec.name!r} cannot pick "
                        "its images (SageMaker pulls them only from its own region); give the stack "
                        "env=Environment(region=...) (the app: -c region=REGION, CDK_DEFAULT_REGION or an AWS "
                        "profile with a region)", field="region")
    if region not in sagemaker_regions():
        raise SpecError(f"stack {stack.node.path!r} deploys to {region!r}, which is not a region where SageMaker "
                        "runs", field="region")
    declared = declared_region(spec)
    if declared and declared != region:
        raise SpecError(f"the spec runs in {spec.storage.region} but stack {stack.node.path!r} deploys to {region}; "
                        f"deploy the stack to {spec.storage.region}, or drop storage.region from the spec to compile "
                        "it for the stack's region", field="storage.region")
    return region
