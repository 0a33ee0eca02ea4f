"""The ready CDK app: one stack per bake-off spec in a folder.

    cd cdk && npx cdk synth -c specDir=../examples [-c account=123456789012 -c region=us-east-1]
"""
from __future__ import annotations

import sys
from pathlib import Path

import aws_cdk as cdk

from bakeoff_cdk import BakeoffPipeline, add_security_checks
from pipelines.errors import BakeoffError
from pipelines.loader import load_spec

HERE = Path(__file__).resolve().parent


def build_app(app: cdk.App) -> cdk.App:
    spec_dir = Path(app.node.try_get_context("specDir") or HERE.parent / "examples")
    if not spec_dir.is_absolute():
        spec_dir = (Path.cwd() / spec_dir).resolve()
    account = app.node.try_get_context("account")
    region = app.node.try_get_context("region")
    env = cdk.Environment(account=account, region=region) if account or region else None
    specs = sorted(spec_dir.glob("*.yaml")) + sorted(spec_dir.glob("*.yml"))
    if not specs:
        raise BakeoffError(f"no bake-off specs (*.yaml) in {spec_dir}; pass -c specDir=DIR")
    for path in specs:
        spec = load_spec(path)
        stack = cdk.Stack(app, f"Bakeoff-{spec.name}", env=env,
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
