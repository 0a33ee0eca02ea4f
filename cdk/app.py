"""The ready CDK app: one stack per bake-off spec in a folder.

    cd cdk && npx cdk synth -c specDir=../examples [-c account=123456789012] [-c region=us-west-2]

Each stack deploys to a concrete region (the images, their grants and the registry
account follow it), taken from, in order:
  1. `-c region=REGION` (every stack; a spec that names another `storage.region` is refused),
  2. the spec's own `storage.region` when it names one,
  3. CDK_DEFAULT_REGION, which the CDK CLI sets from AWS_REGION / the AWS profile.
The account comes from `-c account=...`, else CDK_DEFAULT_ACCOUNT (the credentials'),
else the stack stays account-agnostic (fine: nothing depends on the account at synth).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import aws_cdk as cdk

from bakeoff.pipelines.errors import BakeoffError, SpecError
from bakeoff.pipelines.sagemaker.cdk.bundle import declared_region
from bakeoff.pipelines.spec.loader import load_spec
from bakeoff_cdk import BakeoffPipeline, add_security_checks

HERE = Path(__file__).resolve().parent


def stack_region(app: cdk.App, spec, environ=os.environ) -> str | None:
    return app.node.try_get_context("region") or declared_region(spec) or environ.get("CDK_DEFAULT_REGION")


def build_app(app: cdk.App, environ=os.environ) -> cdk.App:
    spec_dir = Path(app.node.try_get_context("specDir") or HERE.parent / "examples")
    if not spec_dir.is_absolute():
        spec_dir = (Path.cwd() / spec_dir).resolve()
    account = app.node.try_get_context("account") or environ.get("CDK_DEFAULT_ACCOUNT")
    specs = sorted(spec_dir.glob("*.yaml")) + sorted(spec_dir.glob("*.yml"))
    if not specs:
        raise BakeoffError(f"no bake-off specs (*.yaml) in {spec_dir}; pass -c specDir=DIR")
    for path in specs:
        spec = load_spec(path)
        region = stack_region(app, spec, environ)
        if not region:
            raise SpecError(f"no region for bake-off {spec.name!r}: pass -c region=REGION (or set AWS_REGION, "
                            "or use an AWS profile with a region)", file=str(path))
        stack = cdk.Stack(app, f"Bakeoff-{spec.name}", env=cdk.Environment(account=account, region=region),
                          description=f"bakeoff pipeline {spec.name} (from {path.name})")
        BakeoffPipeline(stack, "Bakeoff", spec=spec)
    add_security_checks(app)
    return app


def main() -> int:
    app = cdk.App()
    try:
        build_app(app)
    except BakeoffError as exc:
        print(f"bakeoff: error: {exc}", file=sys.stderr)
        return exc.exit_code
    app.synth()
    return 0


if __name__ == "__main__":
    sys.exit(main())
