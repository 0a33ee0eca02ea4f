"""A Lambda handler for a Step Functions state machine that runs a bake-off on SageMaker.

The state machine (`state_machine.asl.json` beside this file) calls the one handler with an `action`:

    deploy -> start -> (Wait 60 s -> poll) until finished -> report -> Choice on the verdict

A Lambda function runs for at most 900 seconds
(docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html), and a bake-off runs for hours, so
the handler never waits: `poll` asks once and the state machine's Wait state does the waiting.

Each action takes and returns JSON only. Package this file with bakeoff installed (and the spec file)
as the function's code; give the function's role sagemaker:*Pipeline*, sagemaker:Describe*Job,
s3:GetObject/PutObject/HeadObject on the bucket, and iam:PassRole on the SageMaker execution role.

What that package weighs today (bakeoff 0.1.0 with its core dependencies, for Lambda's Python 3.12 on
x86_64, with this file and a spec):

    uv pip install --target pkg --python-platform x86_64-manylinux_2_28 --python-version 3.12 .
    cp examples/orchestration/step_functions/handler.py examples/quickstart.yaml pkg/
    cd pkg && zip -qr9 ../function.zip .

214,240,240 bytes unpacked (204 MiB), of which SciPy 112 MB and NumPy 53 MB with their bundled
libraries, boto3, botocore and s3transfer 27.5 MB; 75,580,638 bytes zipped (72 MiB). Lambda takes a .zip
of at most 50 MB uploaded directly (a larger one goes through S3) and at most 250 MB (262,144,000 bytes)
unpacked, layers included (docs.aws.amazon.com/lambda/latest/dg/limits.html, "AWS Lambda Deployment
Limits"; the figure in bytes as Lambda's own error states it, repost.aws/questions/QUt1Cc15fbTkWsVXPNmj6MNQ):
this package must go through S3 and uses 82% of the unpacked limit, leaving little room for anything else.
"""
from __future__ import annotations

import os
import tempfile
from typing import Any

from pipelines import Deployment, Execution, SpecError, TimedOut, deploy, report, start, wait


def handler(event: dict[str, Any], context: Any = None, session: Any = None) -> dict[str, Any]:
    """Dispatch on `event["action"]`: deploy, start, poll or report. `session` (a boto3.Session) is for
    callers other than Lambda; Lambda's own credentials are used without it."""
    action = event.get("action")
    if action == "deploy":
        spec = event.get("spec") or os.environ.get("BAKEOFF_SPEC", "bakeoff.yaml")
        role = event.get("role_arn") or os.environ["BAKEOFF_ROLE_ARN"]
        result = deploy(spec, role_arn=role, bucket=event.get("bucket") or os.environ.get("BAKEOFF_BUCKET"),
                        region=event.get("region"), session=session)
        return {"deployment": result.model_dump(mode="json")}
    if action == "start":
        execution = start(Deployment.model_validate(event["deployment"]), event.get("parameters"), session=session)
        return {"execution": execution.model_dump(mode="json")}
    if action == "poll":
        handle = Execution.model_validate(event["execution"])
        try:
            state = wait(handle, timeout_s=0, session=session)  # one look, no waiting
        except TimedOut:
            return {"execution": handle.model_dump(mode="json"), "finished": False, "status": "Executing"}
        return {"execution": handle.model_dump(mode="json"), "finished": True, "status": state.status,
                "failure_reason": state.failure_reason}
    if action == "report":
        handle = Execution.model_validate(event["execution"])
        out = os.path.join(tempfile.gettempdir(), "bakeoff-report")  # Lambda may write only under /tmp
        result = report(handle, out_dir=out, render=False, session=session)
        return {"verdict": result.verdict, "summary": result.evaluation.get("summary"),
                "exit_code": result.exit_code}
    raise SpecError(f"unknown action {action!r}; expected deploy, start, poll or report")
